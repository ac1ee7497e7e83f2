package release

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/art-runtime/art/lib/exitcode"
)

// maxBinary bounds a binary archive member verify reads into memory.
const maxBinary = 1 << 30

// binaryArchive checks a binary archive: the deterministic form
// writeBinArchive writes (sorted plain members, the commit time, 755/644,
// no owners), exactly the members the manifest lists with their digests,
// and for each binary the SBOM its embedded build information gives.
func (v *verifier) binaryArchive(p string, a Artifact) {
	m := v.manifest
	pl, _ := ParsePlatform(a.Platform)
	mt, _ := time.Parse(time.RFC3339Nano, m.CommitTime)
	files, names, err := readBinArchive(p, pl.OS == "windows", mt, maxBinary)
	if err != nil {
		v.problem(a.Name, "%v", err)
		return
	}
	listed := map[string]ArchiveFile{}
	for _, f := range a.Files {
		listed[f.Name] = f
	}
	for _, n := range names {
		f, ok := listed[n]
		if !ok {
			v.problem(a.Name, "member %s is not in the manifest", n)
			continue
		}
		b := files[n]
		if sha256Hex(b) != f.SHA256 || int64(len(b)) != f.Size {
			v.problem(a.Name, "member %s: sha256 %s, the manifest says %s", n, sha256Hex(b), f.SHA256)
		}
		if f.Binary {
			v.expectBinarySBOM(a, f, b)
		}
	}
	for _, f := range a.Files {
		if _, ok := files[f.Name]; !ok {
			v.problem(a.Name, "member %s (in the manifest) is missing", f.Name)
		}
	}
}

// expectBinarySBOM computes the SBOM a binary's build information gives.
func (v *verifier) expectBinarySBOM(a Artifact, f ArchiveFile, bin []byte) {
	m := v.manifest
	pl, _ := ParsePlatform(a.Platform)
	name := f.Name[:len(f.Name)-len(pl.Exe())]
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		v.problem(a.Name, "member %s: no Go build information: %v", f.Name, err)
		return
	}
	c := v.releaseContract()
	if c == nil {
		v.unchecked(binarySBOMName(name, m.Version, pl), "licenseDeclared, supplier", "the contract is not available; pass %s FILE", exitcode.Ref("ContractFile"))
		return
	}
	mt, _ := time.Parse(time.RFC3339Nano, m.CommitTime)
	id := &Identity{Commit: &Commit{ID: m.Commit, Tree: m.Tree, CommitterTime: mt.Unix()}, Tag: m.Tag, Version: m.Version, GoVersion: v.sourceGoVersion}
	sname := binarySBOMName(name, m.Version, pl)
	lic, missing := moduleLicenses(v.moduleCache(), bi)
	if len(missing) > 0 {
		// Not in this machine's module cache: the SBOM's word is taken,
		// and said to be.
		claimed := sbomLicenses(filepath.Join(v.dir, sname))
		for _, k := range missing {
			lic[k] = claimed[k]
		}
		v.unchecked(sname, "licences of "+strings.Join(missing, ", "), "not in this machine's module cache (go mod download them to check)")
	}
	data, err := buildBinarySBOM(binarySBOMInput{Contract: c, ID: id, Binary: name, Platform: pl, SHA256: f.SHA256, Info: bi, Licenses: lic})
	if err != nil {
		v.problem(a.Name, "member %s: %v", f.Name, err)
		return
	}
	if v.binSBOMs == nil {
		v.binSBOMs = map[string][]byte{}
	}
	v.binSBOMs[sname] = data
}

// moduleCache is this machine's GOMODCACHE ("" without a go command).
func (v *verifier) moduleCache() string {
	if v.modCache == nil {
		mc := ""
		if g, err := findGo(context.Background()); err == nil {
			mc = g.keep["GOMODCACHE"]
		}
		v.modCache = &mc
	}
	return *v.modCache
}

// sbomLicenses maps "path@version" to the licence an SBOM file declares.
func sbomLicenses(p string) map[string]string {
	out := map[string]string{}
	data, err := os.ReadFile(p)
	if err != nil {
		return out
	}
	var doc SPDXDocument
	if json.Unmarshal(data, &doc) != nil {
		return out
	}
	for _, pkg := range doc.Packages {
		if pkg.LicenseDeclared != spdxNoAssertion {
			out[pkg.Name+"@"+pkg.VersionInfo] = pkg.LicenseDeclared
		}
	}
	return out
}

// binarySBOM records a binary SBOM for checkBinarySBOMs.
func (v *verifier) binarySBOM(p string, a Artifact) {
	v.binSBOMFiles = append(v.binSBOMFiles, a)
}

// checkBinarySBOMs requires each binary SBOM to be the one its binary's
// build information gives, and each binary to have one.
func (v *verifier) checkBinarySBOMs() {
	seen := map[string]bool{}
	for _, a := range v.binSBOMFiles {
		seen[a.Name] = true
		want, ok := v.binSBOMs[a.Name]
		if !ok {
			if c := v.releaseContract(); c != nil {
				v.problem(a.Name, "describes no binary of the release's archives")
			}
			continue
		}
		got, err := os.ReadFile(filepath.Join(v.dir, a.Name))
		if err != nil {
			v.problem(a.Name, "cannot read: %v", err)
			continue
		}
		if !bytes.Equal(got, want) {
			v.problem(a.Name, "is not the SBOM the binary's build information gives: %s", sbomDiff(want, got))
		}
	}
	for name := range v.binSBOMs {
		if !seen[name] {
			v.problem(name, "missing: every binary has an SBOM")
		}
	}
}

// releaseContract is the contract the release was built under, when verify
// has it (--contract FILE, or the archive's release.json, with the
// manifest's digest), with its module completed from the archive's root
// go.mod; nil otherwise.
func (v *verifier) releaseContract() *Contract {
	data := v.contractData
	if data == nil {
		data = v.treeData[ContractPath]
	}
	if data == nil || sha256Hex(data) != v.manifest.Contract.SHA256 {
		return nil
	}
	c, err := DecodeContract(data)
	if err != nil {
		return nil
	}
	if c.Module == "" {
		if f, err := modfile.ParseLax("go.mod", v.treeData["go.mod"], nil); err == nil && f.Module != nil {
			c.Module = f.Module.Mod.Path
		}
	}
	return c
}

// rebuildBinaries builds the binaries again from the release's source
// archive, with the toolchain the manifest names, and requires the same
// bytes: each binary, and each archive written from them.
func (v *verifier) rebuildBinaries(ctx context.Context) error {
	m := v.manifest
	c := v.releaseContract()
	src, ok := m.Artifact(ArtifactArchive)
	if c == nil || !ok {
		v.unchecked(ManifestName, "binaries", "not rebuilt: the contract is not available; pass %s FILE", exitcode.Ref("ContractFile"))
		return nil
	}
	c.Toolchain = m.Go // the rebuild must run the toolchain that built them
	mt, _ := time.Parse(time.RFC3339Nano, m.CommitTime)
	id := &Identity{Commit: &Commit{ID: m.Commit, Tree: m.Tree, CommitterTime: mt.Unix()}, Tag: m.Tag, Version: m.Version, GoVersion: v.sourceGoVersion}
	tmp, err := os.MkdirTemp("", "artrelease-verify-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bb, err := buildBinaries(ctx, tmp, filepath.Join(v.dir, src.Name), c, id, func(string, ...any) {})
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if exitcode.Of(err) == exitcode.Refused || exitcode.Of(err) == exitcode.ProgramNotFound {
			// Not a verdict on the release: this machine cannot rebuild
			// it (another toolchain, no go command).
			return err
		}
		v.problem(ManifestName, "rebuilding the binaries from %s failed: %v", src.Name, err)
		return nil
	}
	v.rep.BinariesRebuilt = true
	built := map[string]Artifact{}
	for _, a := range bb.Artifacts {
		built[a.Name] = a
	}
	for _, a := range m.Artifacts {
		if a.Kind != ArtifactBinaryArchive && a.Kind != ArtifactBinarySBOM {
			continue
		}
		b, ok := built[a.Name]
		if !ok {
			v.problem(a.Name, "the contract's binaries build no such file")
			continue
		}
		delete(built, a.Name)
		if a.Kind == ArtifactBinaryArchive {
			want := map[string]string{}
			for _, f := range b.Files {
				want[f.Name] = f.SHA256
			}
			for _, f := range a.Files {
				if w, ok := want[f.Name]; ok && w != f.SHA256 {
					v.problem(a.Name, "member %s differs from a rebuild from the source archive (sha256 %s, rebuilt %s)", f.Name, f.SHA256, w)
				}
			}
		}
		if b.SHA256 != a.SHA256 {
			v.problem(a.Name, "differs from a rebuild from the source archive by %s", bb.GoVersion)
		}
	}
	for name := range built {
		v.problem(name, "built from the contract's binaries but missing from the release")
	}
	return nil
}
