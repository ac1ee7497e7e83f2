package release

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// Manifest is the ReleaseManifest: what was built, from which exact
// objects, and every artifact's size and digest. It is written last but one
// (SHA256SUMS covers it too) and is what Verify starts from.
type Manifest struct {
	jsonx.TypeMeta
	Name        string `json:"name"`
	Version     string `json:"version"`
	Module      string `json:"module,omitempty"`
	Commit      string `json:"commit"`
	Tree        string `json:"tree"`
	Tag         string `json:"tag,omitempty"`
	PreviousTag string `json:"previous_tag,omitempty"`
	// CommitTime is the committer time, RFC 3339 UTC: the mtime of every
	// archive entry and the SBOM's created.
	CommitTime string      `json:"commit_time"`
	Contract   ContractRef `json:"contract"`
	Artifacts  []Artifact  `json:"artifacts"`
	// OmittedSubmodules lists gitlink paths left out of the archive under
	// the contract's "omit" policy.
	OmittedSubmodules []string `json:"omitted_submodules,omitempty"`
	// Go is the toolchain that built the binaries ("go1.26.0"); empty
	// without binaries.
	Go string `json:"go,omitempty"`
	// ChecksumsFile is the contract's second checksum file, byte-identical
	// to SHA256SUMS (goreleaser's checksums.txt).
	ChecksumsFile string `json:"checksums_file,omitempty"`
}

// ContractRef identifies the contract a release was built under.
type ContractRef struct {
	APIVersion string `json:"apiVersion"`
	SHA256     string `json:"sha256"`
}

// Artifact is one file of the release.
type Artifact struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// TarSize and TarSHA256 describe the uncompressed tar of an archive:
	// gzip's bytes may change with the Go release that built them, the
	// tar's do not.
	TarSize   int64  `json:"tar_size,omitempty"`
	TarSHA256 string `json:"tar_sha256,omitempty"`
	// Platform is a binary archive's or binary SBOM's GOOS/GOARCH[/variant].
	Platform string `json:"platform,omitempty"`
	// Binary names the program a binary SBOM describes.
	Binary string `json:"binary,omitempty"`
	// Files are a binary archive's members with their digests.
	Files []ArchiveFile `json:"files,omitempty"`
}

// ArchiveFile is one member of a binary archive.
type ArchiveFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Binary is set for a built program (not an extra file of the tree).
	Binary bool `json:"binary,omitempty"`
}

// ArtifactKinds lists every artifact kind a manifest may hold.
var ArtifactKinds = []string{ArtifactArchive, ArtifactSBOM, ArtifactNotes, ArtifactProvenance, ArtifactBinaryArchive, ArtifactBinarySBOM}

// Artifact kinds of the binaries: one archive per platform, one SBOM per
// binary and platform.
const (
	ArtifactBinaryArchive = "binary_archive"
	ArtifactBinarySBOM    = "binary_sbom"
)

// DocumentKind implements jsonx.Document.
func (*Manifest) DocumentKind() string { return KindManifest }

var (
	hex64RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex40RE   = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	fileNmRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)
	versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
)

// Validate checks what a manifest must hold to be verified at all.
func (m *Manifest) Validate() error {
	if !nameRE.MatchString(m.Name) {
		return jsonx.Errorf("manifest.name", "%q is not a release name", m.Name)
	}
	if !versionRE.MatchString(m.Version) {
		return jsonx.Errorf("manifest.version", "%q is not a semantic version", m.Version)
	}
	if !hex40RE.MatchString(m.Commit) {
		return jsonx.Errorf("manifest.commit", "%q is not a full object id", m.Commit)
	}
	if !hex40RE.MatchString(m.Tree) {
		return jsonx.Errorf("manifest.tree", "%q is not a full object id", m.Tree)
	}
	if _, err := time.Parse(time.RFC3339Nano, m.CommitTime); err != nil || !strings.HasSuffix(m.CommitTime, "Z") {
		return jsonx.Errorf("manifest.commit_time", "%q is not an RFC 3339 UTC time", m.CommitTime)
	}
	if !hex64RE.MatchString(m.Contract.SHA256) {
		return jsonx.Errorf("manifest.contract.sha256", "%q is not a SHA-256", m.Contract.SHA256)
	}
	if len(m.Artifacts) == 0 {
		return jsonx.Errorf("manifest.artifacts", "empty")
	}
	if m.Go != "" && !toolchainRE.MatchString(m.Go) {
		return jsonx.Errorf("manifest.go", "%q is not a Go toolchain name", m.Go)
	}
	if m.ChecksumsFile != "" && (!checksumsRE.MatchString(m.ChecksumsFile) || m.ChecksumsFile == SumsName || m.ChecksumsFile == ManifestName) {
		return jsonx.Errorf("manifest.checksums_file", "%q is not a checksum file name", m.ChecksumsFile)
	}
	seen := map[string]bool{}
	for i, a := range m.Artifacts {
		p := fmt.Sprintf("manifest.artifacts[%d]", i)
		if !fileNmRE.MatchString(a.Name) || a.Name == ManifestName || a.Name == SumsName || a.Name == m.ChecksumsFile {
			return jsonx.Errorf(p+".name", "%q is not an artifact file name", a.Name)
		}
		if seen[a.Name] {
			return jsonx.Errorf(p+".name", "duplicate %q", a.Name)
		}
		seen[a.Name] = true
		if !slices.Contains(ArtifactKinds, a.Kind) {
			return jsonx.Errorf(p+".kind", "unknown kind %q", a.Kind)
		}
		if a.Size < 0 {
			return jsonx.Errorf(p+".size", "negative")
		}
		if !hex64RE.MatchString(a.SHA256) {
			return jsonx.Errorf(p+".sha256", "%q is not a SHA-256", a.SHA256)
		}
		if (a.Kind == ArtifactArchive) != (a.TarSHA256 != "") {
			return jsonx.Errorf(p+".tar_sha256", "required for an archive and only for one")
		}
		if a.TarSHA256 != "" && !hex64RE.MatchString(a.TarSHA256) {
			return jsonx.Errorf(p+".tar_sha256", "%q is not a SHA-256", a.TarSHA256)
		}
		binKind := a.Kind == ArtifactBinaryArchive || a.Kind == ArtifactBinarySBOM
		if _, ok := ParsePlatform(a.Platform); binKind != ok || !binKind && a.Platform != "" {
			return jsonx.Errorf(p+".platform", "%q: a GOOS/GOARCH is required for a binary archive or SBOM and only for one", a.Platform)
		}
		if (a.Kind == ArtifactBinarySBOM) != (a.Binary != "") {
			return jsonx.Errorf(p+".binary", "required for a binary SBOM and only for one")
		}
		if (a.Kind == ArtifactBinaryArchive) != (len(a.Files) > 0) {
			return jsonx.Errorf(p+".files", "required for a binary archive and only for one")
		}
		for j, f := range a.Files {
			if !fileNmRE.MatchString(f.Name) || f.Size < 0 || !hex64RE.MatchString(f.SHA256) {
				return jsonx.Errorf(fmt.Sprintf("%s.files[%d]", p, j), "%q is not a member name with a size and SHA-256", f.Name)
			}
		}
	}
	return nil
}

// Artifact returns the first artifact of a kind.
func (m *Manifest) Artifact(kind string) (Artifact, bool) {
	for _, a := range m.Artifacts {
		if a.Kind == kind {
			return a, true
		}
	}
	return Artifact{}, false
}

// Sum is one line of SHA256SUMS.
type Sum struct {
	SHA256 string
	Name   string
}

// FormatSums writes SHA256SUMS: "<64 hex>  <name>\n" per file, sorted by
// name bytewise, LF endings — what `sha256sum -c` reads (text mode, two
// spaces) and goreleaser writes.
func FormatSums(sums []Sum) []byte {
	s := slices.Clone(sums)
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x.SHA256 + "  " + x.Name + "\n")
	}
	return b.Bytes()
}

// ParseSums reads a SHA256SUMS file strictly: the canonical form only
// (lowercase digests, two spaces, plain names, sorted, no duplicates, LF,
// a final newline), since a release directory holds exactly what
// FormatSums wrote.
func ParseSums(data []byte) ([]Sum, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: empty", SumsName)
	}
	if data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("%s: no final newline", SumsName)
	}
	var sums []Sum
	for i, line := range strings.Split(string(data[:len(data)-1]), "\n") {
		digest, name, ok := strings.Cut(line, "  ")
		if !ok || !hex64RE.MatchString(digest) || !fileNmRE.MatchString(name) {
			return nil, fmt.Errorf("%s:%d: want \"<64 lowercase hex>  <name>\", got %q", SumsName, i+1, line)
		}
		if len(sums) > 0 && name <= sums[len(sums)-1].Name {
			return nil, fmt.Errorf("%s:%d: %q is out of order or repeated", SumsName, i+1, name)
		}
		sums = append(sums, Sum{SHA256: digest, Name: name})
	}
	return sums, nil
}
