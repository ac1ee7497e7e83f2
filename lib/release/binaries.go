package release

import (
	"regexp"
	"slices"
	"strings"

	"github.com/art-runtime/art/lib/jsonx"
)

var (
	toolchainRE = regexp.MustCompile(`^go1\.[0-9]+(\.[0-9]+|rc[0-9]+)?$`)
	binNameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	platformRE  = regexp.MustCompile(`^([a-z0-9]+)/([a-z0-9]+)(/(v[1-4]|[5-7]|v8\.[0-9]|v9\.[0-9]))?$`)
	buildTagRE  = regexp.MustCompile(`^[A-Za-z0-9_.]+$`)
	checksumsRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// Platform is one GOOS/GOARCH[/variant] target.
type Platform struct {
	OS, Arch, Variant string
}

// ParsePlatform reads "linux/amd64", "linux/arm/7", "linux/amd64/v3".
func ParsePlatform(s string) (Platform, bool) {
	m := platformRE.FindStringSubmatch(s)
	if m == nil {
		return Platform{}, false
	}
	return Platform{OS: m[1], Arch: m[2], Variant: m[4]}, true
}

func (p Platform) String() string {
	s := p.OS + "/" + p.Arch
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Suffix is the platform in file names: linux_amd64, linux_arm_7.
func (p Platform) Suffix() string { return strings.ReplaceAll(p.String(), "/", "_") }

// Exe is the executable suffix of the platform's binaries.
func (p Platform) Exe() string {
	if p.OS == "windows" {
		return ".exe"
	}
	return ""
}

// variantEnv is the go command's variable for a GOARCH variant.
func (p Platform) variantEnv() (string, bool) {
	switch p.Arch {
	case "amd64":
		return "GOAMD64", true
	case "arm":
		return "GOARM", true
	case "arm64":
		return "GOARM64", true
	case "386":
		return "GO386", true
	case "mips", "mipsle":
		return "GOMIPS", true
	case "mips64", "mips64le":
		return "GOMIPS64", true
	case "ppc64", "ppc64le":
		return "GOPPC64", true
	}
	return "", false
}

// validateBinaries checks the binaries, toolchain, archive files and
// checksums name.
func (c *Contract) validateBinaries() error {
	if c.Toolchain != "" && !toolchainRE.MatchString(c.Toolchain) {
		return jsonx.Errorf("contract.toolchain", "%q is not a Go toolchain name such as \"go1.26.0\"", c.Toolchain)
	}
	names := map[string]bool{}
	for i, b := range c.Binaries {
		at := jsonPath("contract.binaries", i)
		if err := checkTreePath(strings.TrimPrefix(b.Main, "./")); err != nil || !strings.HasPrefix(b.Main, "./") && b.Main != "." {
			return jsonx.Errorf(at+".main", "%q must be a directory of the tree such as \"./cmd/x\"", b.Main)
		}
		if !binNameRE.MatchString(b.Name) {
			return jsonx.Errorf(at+".name", "%q must be 1-64 of A-Z, a-z, 0-9, '.', '_', '-'", b.Name)
		}
		if names[b.Name] {
			return jsonx.Errorf(at+".name", "duplicate binary %q", b.Name)
		}
		names[b.Name] = true
		if len(b.Platforms) == 0 {
			return jsonx.Errorf(at+".platforms", "required: at least one GOOS/GOARCH such as \"linux/amd64\"")
		}
		seen := map[string]bool{}
		for j, p := range b.Platforms {
			pl, ok := ParsePlatform(p)
			if !ok {
				return jsonx.Errorf(jsonPath(at+".platforms", j), "%q is not GOOS/GOARCH[/variant] (linux/amd64, linux/arm/7, linux/amd64/v3)", p)
			}
			if _, ok := pl.variantEnv(); pl.Variant != "" && !ok {
				return jsonx.Errorf(jsonPath(at+".platforms", j), "%q: %s has no variants", p, pl.Arch)
			}
			if seen[pl.String()] {
				return jsonx.Errorf(jsonPath(at+".platforms", j), "duplicate platform %q", p)
			}
			seen[pl.String()] = true
		}
		for j, f := range b.Ldflags {
			if strings.Contains(f, "-buildid") || f == "" {
				return jsonx.Errorf(jsonPath(at+".ldflags", j), "%q: empty, or sets -buildid (artrelease sets -buildid= for reproducibility)", f)
			}
		}
		for j, t := range b.Tags {
			if !buildTagRE.MatchString(t) {
				return jsonx.Errorf(jsonPath(at+".tags", j), "%q is not a build tag", t)
			}
		}
	}
	for i, f := range c.ArchiveFiles {
		if err := checkTreePath(f); err != nil {
			return jsonx.Errorf(jsonPath("contract.archive_files", i), "%v", err)
		}
		if slices.Contains(c.ArchiveFiles[:i], f) {
			return jsonx.Errorf(jsonPath("contract.archive_files", i), "duplicate %q", f)
		}
	}
	if c.ChecksumsFile != "" && (!checksumsRE.MatchString(c.ChecksumsFile) || c.ChecksumsFile == SumsName || c.ChecksumsFile == ManifestName || c.ChecksumsFile == NotesName) {
		return jsonx.Errorf("contract.checksums_file", "%q must be a plain file name other than %s, %s and %s (e.g. \"checksums.txt\")", c.ChecksumsFile, SumsName, ManifestName, NotesName)
	}
	return nil
}
