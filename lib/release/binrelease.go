package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// binaryBuild is the outcome of building a release's binaries.
type binaryBuild struct {
	GoVersion string
	Artifacts []Artifact // binary archives, then binary SBOMs
}

// buildBinaries builds the contract's binaries from the release's own
// source archive (archivePath, already written), extracted into a fresh
// temporary directory — never a worktree — and writes into dir one
// deterministic archive per platform (the binaries plus the contract's
// archive files) and one SBOM per binary and platform.
func buildBinaries(ctx context.Context, dir, archivePath string, c *Contract, id *Identity, progress func(string, ...any)) (*binaryBuild, error) {
	work, err := os.MkdirTemp("", "artrelease-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if err := os.Mkdir(filepath.Join(work, "src"), 0o755); err != nil {
		return nil, err
	}
	src, err := extractSource(archivePath, filepath.Join(work, "src"))
	if err != nil {
		return nil, err
	}
	g, err := findGo(ctx)
	if err != nil {
		return nil, err
	}
	jobs := binaryJobs(c, filepath.Join(work, "bin"))
	for _, j := range jobs {
		if err := os.MkdirAll(filepath.Dir(j.Out), 0o755); err != nil {
			return nil, err
		}
	}
	progress("building %d binaries from the source archive", len(jobs))
	res, err := goBuild(ctx, g, src, work, c.Toolchain, id, jobs)
	if err != nil {
		return nil, err
	}
	extra, err := archiveFiles(src, c.ArchiveFiles)
	if err != nil {
		return nil, err
	}
	out := &binaryBuild{GoVersion: res.GoVersion}
	byPlatform := map[string][]buildJob{}
	var platforms []string
	for _, j := range jobs {
		k := j.Platform.String()
		if byPlatform[k] == nil {
			platforms = append(platforms, k)
		}
		byPlatform[k] = append(byPlatform[k], j)
	}
	sort.Strings(platforms)
	var sboms []Artifact
	for _, k := range platforms {
		pj := byPlatform[k]
		p := pj[0].Platform
		members := append([]binMember(nil), extra...)
		var files []ArchiveFile
		for _, j := range pj {
			name := j.Bin.Name + p.Exe()
			for _, e := range extra {
				if e.Name == name {
					return nil, jsonx.Errorf("contract.archive_files", "%s has the name of the binary %s", e.Name, name)
				}
			}
			members = append(members, binMember{Name: name, Mode: 0o755, Path: j.Out})
			sum, size, err := fileDigest(j.Out)
			if err != nil {
				return nil, err
			}
			files = append(files, ArchiveFile{Name: name, Size: size, SHA256: sum, Binary: true})

			bi, err := readBuildInfo(j.Out)
			if err != nil {
				return nil, err
			}
			lic, _ := moduleLicenses(g.keep["GOMODCACHE"], bi)
			data, err := buildBinarySBOM(binarySBOMInput{Contract: c, ID: id, Binary: j.Bin.Name, Platform: p, SHA256: sum, Info: bi, Licenses: lic})
			if err != nil {
				return nil, err
			}
			a, err := writeArtifact(dir, binarySBOMName(j.Bin.Name, id.Version, p), ArtifactBinarySBOM, data)
			if err != nil {
				return nil, err
			}
			a.Platform, a.Binary = p.String(), j.Bin.Name
			sboms = append(sboms, a)
		}
		for _, e := range extra {
			sum, size, err := fileDigest(e.Path)
			if err != nil {
				return nil, err
			}
			files = append(files, ArchiveFile{Name: e.Name, Size: size, SHA256: sum})
		}
		sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
		aname := binArchiveName(c.Name, id.Version, p)
		progress("writing %s", aname)
		w, err := writeFileWith(dir, aname, func(w io.Writer) (any, error) {
			return nil, writeBinArchive(w, p.OS == "windows", members, id.Time())
		})
		if err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, Artifact{Name: aname, Kind: ArtifactBinaryArchive, Size: w.size, SHA256: w.sha256, Platform: p.String(), Files: files})
	}
	out.Artifacts = append(out.Artifacts, sboms...)
	return out, nil
}

// archiveFiles are the contract's extra files, by base name, from the
// extracted tree: each must be a regular file there; executables keep 0755.
func archiveFiles(src string, paths []string) ([]binMember, error) {
	var out []binMember
	seen := map[string]string{}
	for i, p := range paths {
		at := jsonPath("contract.archive_files", i)
		full := filepath.Join(src, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, exitcode.Wrap(exitcode.Usage, jsonx.Errorf(at, "%s is not a regular file in the tree of the commit", p))
		}
		base := path.Base(p)
		if prev, ok := seen[base]; ok {
			return nil, exitcode.Wrap(exitcode.Usage, jsonx.Errorf(at, "%s and %s have one name in the archive", prev, p))
		}
		seen[base] = p
		mode := int64(0o644)
		if fi.Mode()&0o100 != 0 {
			mode = 0o755
		}
		out = append(out, binMember{Name: base, Mode: mode, Path: full})
	}
	return out, nil
}

func fileDigest(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
