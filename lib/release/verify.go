package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// VerifyReport is the outcome of Verify: every problem found, not just the
// first, so one run tells the whole story of a tampered directory.
type VerifyReport struct {
	Dir     string   `json:"dir"`
	OK      bool     `json:"ok"`
	Name    string   `json:"name,omitempty"`
	Version string   `json:"version,omitempty"`
	Commit  string   `json:"commit,omitempty"`
	Files   []string `json:"files"`
	Rebuilt bool     `json:"rebuilt"`
	// BinariesRebuilt is set when the binaries were built again from the
	// source archive and compared.
	BinariesRebuilt bool      `json:"binaries_rebuilt"`
	Problems        []Problem `json:"problems"`
	// Unchecked lists what the files alone cannot prove — what only the
	// repository (tags, history) or the contract knows — one entry per
	// field, so a reader sees what a pass without --repo did not cover.
	// Empty after a rebuild, which compares every byte.
	Unchecked []Unchecked `json:"unchecked"`
}

// Unchecked is one field verify could not check, and why.
type Unchecked struct {
	File  string `json:"file"`
	Field string `json:"field"`
	Why   string `json:"why"`
	// Reason renders Why with the caller's names for the options it
	// refers to (exitcode.Ref "Repo", "ContractFile"): the CLI words them
	// as its flags.
	Reason *exitcode.Hinted `json:"-"`
}

func (u Unchecked) String() string { return u.File + ": " + u.Field + ": " + u.Why }

// Problem is one way a release directory fails to verify.
type Problem struct {
	File string `json:"file"`
	Msg  string `json:"problem"`
	// Err is the problem as an error naming the fields it refers to (an
	// option such as "ContractFile"), when it names one: the CLI words Msg
	// from it in its flags. Nil for most problems.
	Err *exitcode.FieldError `json:"-"`
}

func (p Problem) String() string { return p.File + ": " + p.Msg }

// VerifyOptions says what to verify.
type VerifyOptions struct {
	Dir string
	// Repo, when set, also rebuilds the release from the manifest's commit
	// in that repository and requires byte-identical files.
	Repo string
	// ContractFile is the contract a release built with --contract FILE was
	// built under: its sha256 must be the manifest's, and the SBOM check and
	// the rebuild use it instead of the archive's release.json.
	ContractFile string
	// Strict fails (ErrUnchecked, exit 1) when any field could not be
	// checked, instead of only listing it.
	Strict bool
	// SkipBinaries does not rebuild the binaries (listed as unchecked).
	SkipBinaries bool
}

// Verify re-derives everything a release directory claims, from the files
// alone: SHA256SUMS and the manifest agree with each other and with the
// directory (no missing, no extra file); every file has its recorded size
// and digest; the archive decompresses to the recorded tar, with one top
// directory, sorted paths, the commit time, root ownership without names
// and only the modes a build writes; the SBOM is in canonical form, its
// namespace is the one its content earns, and it describes this archive;
// the provenance names exactly these artifacts; the notes name the commit.
// With Repo set it also rebuilds and compares bytes.
//
// It returns the report and, when anything failed, an error wrapping
// ErrMismatch (exit 1). A directory that does not exist is ErrNotFound.
func Verify(ctx context.Context, o VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{Dir: o.Dir, Files: []string{}, Problems: []Problem{}, Unchecked: []Unchecked{}}
	fi, err := os.Stat(o.Dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return rep, fmt.Errorf("release directory %s: %w", o.Dir, ErrNotFound)
		}
		return rep, fmt.Errorf("release directory %s: %w", o.Dir, err)
	}
	if !fi.IsDir() {
		return rep, exitcode.Fieldf(exitcode.Usage, "Dir", o.Dir, "release directory %s: not a directory", o.Dir)
	}
	v := &verifier{dir: o.Dir, rep: rep}
	if o.ContractFile != "" {
		data, err := os.ReadFile(o.ContractFile)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return rep, fmt.Errorf("contract %s: %w", o.ContractFile, ErrNotFound)
			}
			return rep, fmt.Errorf("contract %s: %w", o.ContractFile, err)
		}
		if _, err := DecodeContract(data); err != nil {
			return rep, fmt.Errorf("contract %s: %w", o.ContractFile, err)
		}
		v.contractFile, v.contractData = o.ContractFile, data
	}
	v.run()
	if v.manifest != nil && len(rep.Problems) == 0 {
		_, hasBin := v.manifest.Artifact(ArtifactBinaryArchive)
		if c := v.releaseContract(); c != nil && len(c.Binaries) > 0 && !hasBin {
			// Every binary archive deleted, with the manifest and
			// SHA256SUMS re-signed: the contract still declares them.
			v.problem(ManifestName, "the contract declares %d binaries, the release has no binary archive", len(c.Binaries))
		}
		if hasBin {
			if o.Repo != "" {
				// The rebuild from the repository builds them again.
			} else if o.SkipBinaries {
				v.unchecked(ManifestName, "binaries", "not rebuilt (skipped): their bytes are checked only against the manifest and SHA256SUMS")
			} else if err := v.rebuildBinaries(ctx); err != nil {
				return rep, err
			}
		}
	}
	if o.Repo != "" && v.manifest != nil && len(rep.Problems) == 0 {
		if err := v.rebuild(ctx, o.Repo); err != nil {
			return rep, err
		}
		rep.Rebuilt = true
		_, hasBin := v.manifest.Artifact(ArtifactBinaryArchive)
		rep.BinariesRebuilt = hasBin && len(rep.Problems) == 0
		rep.Unchecked = []Unchecked{} // the rebuild compared every byte
	}
	rep.OK = len(rep.Problems) == 0 && (!o.Strict || len(rep.Unchecked) == 0)
	if len(rep.Problems) == 0 && !rep.OK {
		return rep, fmt.Errorf("%s: %w: %d fields (first: %s)", o.Dir, ErrUnchecked, len(rep.Unchecked), rep.Unchecked[0])
	}
	if !rep.OK {
		first := rep.Problems[0]
		more := ""
		if n := len(rep.Problems) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more)", n)
		}
		if first.Err != nil { // the CLI words its fields in flags
			return rep, fmt.Errorf("%s: %w: %s: %w%s", o.Dir, ErrMismatch, first.File, first.Err, more)
		}
		return rep, fmt.Errorf("%s: %w: %s%s", o.Dir, ErrMismatch, first, more)
	}
	return rep, nil
}

type verifier struct {
	dir      string
	rep      *VerifyReport
	manifest *Manifest
	present  map[string]bool
	digests  map[string]string // name → sha256 of the bytes on disk
	extras   []string          // files SHA256SUMS does not list
	// Binary SBOMs: the expected bytes by name, computed from each
	// binary's build information, and the SBOM artifacts found.
	binSBOMs     map[string][]byte
	binSBOMFiles []Artifact
	modCache     *string // this machine's GOMODCACHE, once asked
	// sourceGoVersion is the source package's purl version (the release's
	// Go version), once the SBOM was read.
	sourceGoVersion string

	contractFile string // --contract FILE
	contractData []byte
	// From the archive, once it read cleanly: every regular file's path
	// (relative to the top directory) and the bytes of the files the SBOM
	// is computed from (go.mod, go.sum, go.work, release.json).
	archiveRead bool
	treeFiles   map[string]bool
	treeData    map[string][]byte
}

// sbomSource reports whether a path of the tree is one the SBOM is
// computed from, so verify keeps its bytes.
func sbomSource(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	return base == "go.mod" || base == "go.sum" || p == "go.work" || p == ContractPath
}

// maxSBOMSource bounds what verify holds in memory per file.
const maxSBOMSource = 64 << 20

// unchecked records a field the files alone cannot prove.
func (v *verifier) unchecked(file, field, format string, args ...any) {
	h := exitcode.WithHint(errUnchecked, format, args...).(*exitcode.Hinted)
	v.rep.Unchecked = append(v.rep.Unchecked, Unchecked{File: file, Field: field, Why: h.Hint(), Reason: h})
}

// errUnchecked carries an Unchecked reason (exitcode.Hinted renders it).
var errUnchecked = errors.New("unchecked")

func (v *verifier) problem(file, format string, args ...any) {
	v.rep.Problems = append(v.rep.Problems, Problem{File: file, Msg: fmt.Sprintf(format, args...)})
}

func (v *verifier) run() {
	entries, err := os.ReadDir(v.dir)
	if err != nil {
		v.problem(".", "cannot list: %v", err)
		return
	}
	v.present = map[string]bool{}
	v.digests = map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			v.problem(e.Name(), "extra entry: not a regular file")
			continue
		}
		v.present[e.Name()] = true
		v.rep.Files = append(v.rep.Files, e.Name())
		sum, err := fileSHA256(filepath.Join(v.dir, e.Name()))
		if err != nil {
			v.problem(e.Name(), "cannot read: %v", err)
			continue
		}
		v.digests[e.Name()] = sum
	}

	// SHA256SUMS: canonical, and naming exactly the other files.
	var sums []Sum
	if !v.present[SumsName] {
		v.problem(SumsName, "missing")
	} else if data, err := os.ReadFile(filepath.Join(v.dir, SumsName)); err != nil {
		v.problem(SumsName, "cannot read: %v", err)
	} else if sums, err = ParseSums(data); err != nil {
		v.problem(SumsName, "%v", err)
	}
	listed := map[string]string{}
	for _, s := range sums {
		listed[s.Name] = s.SHA256
	}
	if sums != nil {
		for _, s := range sums {
			got, ok := v.digests[s.Name]
			switch {
			case s.Name == SumsName:
				v.problem(SumsName, "lists itself")
			case !v.present[s.Name]:
				v.problem(s.Name, "missing (listed in %s)", SumsName)
			case ok && got != s.SHA256:
				v.problem(s.Name, "sha256 %s, %s says %s", got, SumsName, s.SHA256)
			}
		}
		for _, name := range v.rep.Files { // sorted, so the report is too
			if _, ok := listed[name]; !ok && name != SumsName {
				v.extras = append(v.extras, name)
			}
		}
	}

	// The manifest: strict, canonical, and agreeing with SHA256SUMS.
	if !v.present[ManifestName] {
		if _, ok := listed[ManifestName]; !ok {
			v.problem(ManifestName, "missing")
		}
		for _, name := range v.extras {
			v.problem(name, "extra file (not in %s)", SumsName)
		}
		return
	}
	data, err := os.ReadFile(filepath.Join(v.dir, ManifestName))
	if err != nil {
		v.problem(ManifestName, "cannot read: %v", err)
		return
	}
	var m Manifest
	if err := jsonx.Decode(data, "manifest", &m); err != nil {
		v.problem(ManifestName, "%v", err)
		return
	}
	if canon, err := jsonx.MarshalIndent(&m); err != nil || !bytes.Equal(canon, data) {
		v.problem(ManifestName, "not in canonical form")
	}
	v.manifest = &m
	v.rep.Name, v.rep.Version, v.rep.Commit = m.Name, m.Version, m.Commit
	for _, name := range v.extras {
		if name != m.ChecksumsFile {
			v.problem(name, "extra file (not in %s)", SumsName)
		} else if v.digests[name] != v.digests[SumsName] {
			v.problem(name, "is not identical to %s", SumsName)
		}
	}
	if m.ChecksumsFile != "" && !v.present[m.ChecksumsFile] {
		v.problem(m.ChecksumsFile, "missing (named in the manifest)")
	}
	v.unchecked(ManifestName, "commit, tree", "the archive is not compared with the repository's objects; needs %s", exitcode.Ref("Repo"))
	if m.Tag != "" {
		v.unchecked(ManifestName, "tag", "%s names this commit only in the repository; needs %s", m.Tag, exitcode.Ref("Repo"))
	}
	if m.PreviousTag != "" {
		v.unchecked(ManifestName, "previous_tag", "%s is the nearest earlier release tag only in the repository's history; needs %s", m.PreviousTag, exitcode.Ref("Repo"))
	}
	if sums != nil {
		want := []string{ManifestName}
		for _, a := range m.Artifacts {
			want = append(want, a.Name)
			if _, ok := listed[a.Name]; !ok {
				v.problem(a.Name, "in the manifest but not in %s", SumsName)
			} else if listed[a.Name] != a.SHA256 {
				v.problem(a.Name, "%s says sha256 %s, the manifest %s", SumsName, listed[a.Name], a.SHA256)
			}
		}
		for _, s := range sums {
			if !slices.Contains(want, s.Name) {
				v.problem(s.Name, "in %s but not in the manifest", SumsName)
			}
		}
	}
	for _, a := range m.Artifacts {
		if !v.present[a.Name] {
			if _, ok := listed[a.Name]; !ok || sums == nil {
				v.problem(a.Name, "missing (listed in the manifest)")
			}
			continue
		}
		if want := expectedName(&m, a); want != a.Name {
			v.problem(a.Name, "a %s must be named %s", a.Kind, want)
		}
		path := filepath.Join(v.dir, a.Name)
		if fi, err := os.Stat(path); err == nil && fi.Size() != a.Size {
			v.problem(a.Name, "size %d, the manifest says %d", fi.Size(), a.Size)
		}
		if got := v.digests[a.Name]; got != "" && got != a.SHA256 {
			v.problem(a.Name, "sha256 %s, the manifest says %s", got, a.SHA256)
		}
		switch a.Kind {
		case ArtifactArchive:
			v.archive(path, a)
		case ArtifactSBOM:
			v.sbom(path, a)
		case ArtifactNotes:
			v.notes(path, a)
		case ArtifactProvenance:
			v.provenance(path, a)
		case ArtifactBinaryArchive:
			v.binaryArchive(path, a)
		case ArtifactBinarySBOM:
			v.binarySBOM(path, a)
		}
	}
	v.checkBinarySBOMs()
	kinds := map[string]int{}
	for _, a := range m.Artifacts {
		kinds[a.Kind]++
	}
	for _, k := range ArtifactKinds {
		if n := kinds[k]; n > 1 && k != ArtifactBinaryArchive && k != ArtifactBinarySBOM {
			v.problem(ManifestName, "%d artifacts of kind %s", n, k)
		}
	}
	if kinds[ArtifactArchive] == 0 {
		v.problem(ManifestName, "no archive")
	}
}

func expectedName(m *Manifest, a Artifact) string {
	p, _ := ParsePlatform(a.Platform)
	switch a.Kind {
	case ArtifactBinaryArchive:
		return binArchiveName(m.Name, m.Version, p)
	case ArtifactBinarySBOM:
		return binarySBOMName(a.Binary, m.Version, p)
	}
	return expectedKindName(m, a.Kind)
}

func expectedKindName(m *Manifest, kind string) string {
	switch kind {
	case ArtifactArchive:
		return archiveName(m.Name, m.Version)
	case ArtifactSBOM:
		return sbomName(m.Name, m.Version)
	case ArtifactProvenance:
		return provenanceName(m.Name, m.Version)
	}
	return NotesName
}

// archive checks the archive's gzip framing and every tar header.
func (v *verifier) archive(path string, a Artifact) {
	f, err := os.Open(path)
	if err != nil {
		v.problem(a.Name, "cannot read: %v", err)
		return
	}
	defer f.Close()
	br := bufio.NewReader(f)
	zr, err := gzip.NewReader(br)
	if err != nil {
		v.problem(a.Name, "not gzip: %v", err)
		return
	}
	zr.Multistream(false)
	if zr.Name != "" || zr.Comment != "" || !zr.ModTime.IsZero() || zr.Extra != nil {
		v.problem(a.Name, "gzip header carries a name, comment, time or extra field")
	}
	th := sha256.New()
	cw := &countWriter{}
	tee := io.TeeReader(zr, io.MultiWriter(th, cw))
	tr := tar.NewReader(tee)
	m := v.manifest
	prefix := m.Name + "-" + m.Version + "/"
	mtime, _ := time.Parse(time.RFC3339Nano, m.CommitTime)
	var prev string
	bad := 0
	files := map[string]bool{}
	data := map[string][]byte{}
	report := func(name, format string, args ...any) {
		if bad < 10 { // a corrupt archive would otherwise drown the report
			v.problem(a.Name, name+": "+format, args...)
		}
		bad++
	}
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			if n == 0 {
				report("(archive)", "empty")
			}
			break
		}
		if err != nil {
			report("(archive)", "unreadable tar: %v", err)
			return
		}
		switch {
		case n == 0 && (h.Name != prefix || h.Typeflag != tar.TypeDir):
			report(h.Name, "the first entry must be the directory %s", prefix)
		case !strings.HasPrefix(h.Name, prefix):
			report(h.Name, "outside the top directory %s", prefix)
		case n > 0 && h.Name <= prev:
			report(h.Name, "out of order or repeated after %s", prev)
		}
		prev = h.Name
		var gitMode uint32
		if h.Typeflag == tar.TypeSymlink {
			gitMode = modeSymlink
		}
		if err := checkPathSyntax(strings.TrimSuffix(strings.TrimPrefix(h.Name, prefix), "/"), gitMode); err != nil && n > 0 {
			report(h.Name, "%v", err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if h.Mode != archiveDirMode || !strings.HasSuffix(h.Name, "/") {
				report(h.Name, "directory mode %o or name without a slash", h.Mode)
			}
		case tar.TypeReg:
			if h.Mode != archiveFileMode && h.Mode != archiveExecMode {
				report(h.Name, "file mode %o (want 644 or 755)", h.Mode)
			}
		case tar.TypeSymlink:
			if h.Mode != archiveSymlinkMode || h.Linkname == "" {
				report(h.Name, "symlink mode %o or empty target", h.Mode)
			}
		default:
			report(h.Name, "entry type %q is never written by a build", h.Typeflag)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			report(h.Name, "owner %d:%d %q:%q (want 0:0 with no names)", h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(mtime) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			report(h.Name, "time %s (want the commit time %s only)", h.ModTime.UTC().Format(time.RFC3339), m.CommitTime)
		}
		binary := !isASCII(h.Name) || !isASCII(h.Linkname)
		for k, val := range h.PAXRecords {
			switch {
			case k == paxHdrCharset && val == paxBinary && binary:
			case k == "path" || k == "linkpath" || k == "size":
			default:
				report(h.Name, "PAX record %s=%q is never written by a build", k, val)
			}
		}
		if binary && h.PAXRecords[paxHdrCharset] != paxBinary {
			report(h.Name, "a name outside ASCII without the PAX record hdrcharset=BINARY")
		}
		if rel := strings.TrimPrefix(h.Name, prefix); h.Typeflag == tar.TypeReg && n > 0 {
			files[rel] = true
			if sbomSource(rel) && h.Size <= maxSBOMSource {
				b, err := io.ReadAll(tr)
				if err != nil {
					report(h.Name, "unreadable: %v", err)
					return
				}
				data[rel] = b
			}
		}
	}
	if _, err := io.Copy(io.Discard, tee); err != nil {
		v.problem(a.Name, "gzip stream: %v", err)
		return
	}
	if _, err := br.Peek(1); err != io.EOF {
		v.problem(a.Name, "data after the gzip stream")
	}
	if got := hex.EncodeToString(th.Sum(nil)); got != a.TarSHA256 || cw.n != a.TarSize {
		v.problem(a.Name, "uncompressed tar is %d bytes with sha256 %s; the manifest says %d bytes, %s", cw.n, got, a.TarSize, a.TarSHA256)
	}
	v.archiveRead, v.treeFiles, v.treeData = bad == 0, files, data
}

// checkPathSyntax refuses names an extractor could be tricked by, and every
// name git would refuse in a tree (checkGitPath): an archive holding .git/
// is refused by verify however its digests were rewritten.
func checkPathSyntax(p string, mode uint32) error {
	if p == "" {
		return errors.New("empty path")
	}
	return checkGitPath(p, mode)
}

// sbom checks the SBOM is the canonical document for this release.
func (v *verifier) sbom(path string, a Artifact) {
	data, err := os.ReadFile(path)
	if err != nil {
		v.problem(a.Name, "cannot read: %v", err)
		return
	}
	var doc SPDXDocument
	if err := jsonx.Unmarshal(data, "sbom", &doc); err != nil {
		v.problem(a.Name, "%v", err)
		return
	}
	if canon, err := jsonx.MarshalIndent(&doc); err != nil || !bytes.Equal(canon, data) {
		v.problem(a.Name, "not in canonical form")
	}
	if ns, err := sbomNamespace(doc); err != nil || ns != doc.DocumentNamespace {
		v.problem(a.Name, "documentNamespace %s is not the one its content gives (%s)", doc.DocumentNamespace, ns)
	}
	m := v.manifest
	if doc.SPDXVersion != SPDXVersion || doc.SPDXID != spdxDocumentID || doc.DataLicense != spdxDataLicense {
		v.problem(a.Name, "not an SPDX 2.3 document header")
	}
	if doc.Name != m.Name+"-"+m.Version {
		v.problem(a.Name, "names %s, the release is %s-%s", doc.Name, m.Name, m.Version)
	}
	mt, _ := time.Parse(time.RFC3339Nano, m.CommitTime)
	if doc.CreationInfo.Created != mt.UTC().Format(spdxTime) {
		v.problem(a.Name, "created %s, the commit time is %s", doc.CreationInfo.Created, m.CommitTime)
	}
	if len(doc.Packages) == 0 || doc.Packages[0].SPDXID != spdxSourceID {
		v.problem(a.Name, "no source package")
		return
	}
	src := doc.Packages[0]
	archive, _ := m.Artifact(ArtifactArchive)
	if src.PackageFileName != archive.Name || len(src.Checksums) != 1 || src.Checksums[0].Algorithm != "SHA256" || src.Checksums[0].ChecksumValue != archive.SHA256 {
		v.problem(a.Name, "the source package does not describe %s with sha256 %s", archive.Name, archive.SHA256)
	}
	if src.VersionInfo != m.Version {
		v.problem(a.Name, "source version %s, the release is %s", src.VersionInfo, m.Version)
	}
	if !strings.Contains(src.SourceInfo, m.Commit) || !strings.Contains(src.SourceInfo, m.Tree) {
		v.problem(a.Name, "the source package does not name commit %s and tree %s", m.Commit, m.Tree)
	}
	ids := map[string]bool{spdxDocumentID: true}
	for _, p := range doc.Packages {
		if ids[p.SPDXID] {
			v.problem(a.Name, "duplicate SPDXID %s", p.SPDXID)
		}
		ids[p.SPDXID] = true
	}
	for _, r := range doc.Relationships {
		if !ids[r.SPDXElementID] || !ids[r.RelatedSPDXElement] {
			v.problem(a.Name, "relationship %s %s %s names an unknown element", r.SPDXElementID, r.RelationshipType, r.RelatedSPDXElement)
		}
	}
	v.recomputeSBOM(a, data, &doc)
}

// recomputeSBOM builds the SBOM again from the archive's own go.mod, go.sum
// and go.work files and the manifest, and requires the same bytes: an
// edited, added or deleted module (with every digest rewritten to match)
// is caught without the repository. What only the repository knows — the
// versions of the tree's own modules, which come from its tags — is taken
// from the SBOM and checked for shape: a Go version, and a pseudo-version
// must name the manifest's commit and commit time. The license comes from
// the contract: --contract FILE, else the archive's release.json when its
// digest is the manifest's (a release built with --contract needs the
// file to check the license).
func (v *verifier) recomputeSBOM(a Artifact, data []byte, doc *SPDXDocument) {
	archive, _ := v.manifest.Artifact(ArtifactArchive)
	if !v.archiveRead {
		return // the archive's own problems are reported already
	}
	m := v.manifest
	mt, _ := time.Parse(time.RFC3339Nano, m.CommitTime)
	src := doc.Packages[0]
	c := Contract{Name: m.Name, License: src.LicenseDeclared, Supplier: strings.TrimPrefix(src.Supplier, "Organization: ")}
	if src.Supplier == spdxNoAssertion {
		c.Supplier = ""
	}
	contract := v.contractData
	if contract == nil {
		contract = v.treeData[ContractPath]
	}
	haveContract := false
	if contract != nil {
		sum := sha256.Sum256(contract)
		if hex.EncodeToString(sum[:]) == m.Contract.SHA256 {
			if cc, err := DecodeContract(contract); err == nil {
				c.License, c.Module, c.Supplier = cc.License, cc.Module, cc.Supplier
				haveContract = true
			}
		} else if v.contractFile != "" {
			v.problem(ManifestName, "contract %s has sha256 %s, the release was built under %s", v.contractFile, hex.EncodeToString(sum[:]), m.Contract.SHA256)
		}
	}
	if !haveContract {
		why := "taken from the SBOM: the release was built under a contract that is not the archive's release.json; pass it as %s FILE"
		v.unchecked(a.Name, "source licenseDeclared", why, exitcode.Ref("ContractFile"))
		v.unchecked(a.Name, "source supplier", why, exitcode.Ref("ContractFile"))
	}
	dirs, work, err := moduleDirs(v.treeFiles, v.treeData["go.work"])
	if err != nil {
		v.problem(a.Name, "cannot recompute from the archive: %v", err)
		return
	}
	mods, stray, err := parseTreeModules(dirs, work, func(p string) ([]byte, error) { return v.treeData[p], nil })
	if err != nil {
		v.problem(a.Name, "cannot recompute from the archive: %v", err)
		return
	}
	// A root go.mod names the module whatever the SBOM says (build refuses
	// a contract module that differs from it).
	if len(mods) > 0 && mods[0].Dir == "" {
		if c.Module != "" && c.Module != mods[0].GoMod.Module {
			v.problem(a.Name, "contract module %s, but the archive's go.mod declares %s", c.Module, mods[0].GoMod.Module)
		}
		c.Module = mods[0].GoMod.Module
	}
	srcVersion := ""
	for _, ref := range src.ExternalRefs {
		if ref.ReferenceType == "purl" {
			if _, ver, ok := strings.Cut(ref.ReferenceLocator, "@"); ok {
				srcVersion = strings.ReplaceAll(ver, "%2B", "+")
			}
			if c.Module == "" {
				p, _, _ := strings.Cut(strings.TrimPrefix(ref.ReferenceLocator, "pkg:golang/"), "@")
				c.Module = p
				v.unchecked(a.Name, "source purl module path", "taken from the SBOM: the archive has no root go.mod and the contract is not available (%s)", exitcode.Ref("ContractFile"))
			}
		}
	}
	byID := map[string]SPDXPackage{}
	for _, p := range doc.Packages {
		byID[p.SPDXID] = p
	}
	checkVersion := func(what, ver string) {
		if ver == "" {
			return
		}
		if !semver.IsValid(ver) {
			v.problem(a.Name, "%s: version %q is not a Go module version", what, ver)
			return
		}
		if module.IsPseudoVersion(ver) {
			rev, _ := module.PseudoVersionRev(ver)
			t, _ := module.PseudoVersionTime(ver)
			if !strings.HasPrefix(m.Commit, rev) || !t.Equal(mt) {
				v.problem(a.Name, "%s: pseudo-version %s does not name commit %s at %s", what, ver, m.Commit[:12], m.CommitTime)
			}
		}
	}
	v.sourceGoVersion = srcVersion
	if c.Module != "" {
		checkVersion("source", srcVersion)
		// The release version is the Go version less "v" and any
		// +incompatible, tagged or not.
		if semver.IsValid(srcVersion) && semver.Canonical(srcVersion) != "v"+m.Version {
			v.problem(a.Name, "source purl version %s is not the release version %s", srcVersion, m.Version)
		}
	}
	for i := range mods {
		if mods[i].Dir == "" {
			mods[i].Version = srcVersion
			continue
		}
		mods[i].Version = byID["SPDXRef-Package-module-"+spdxIDPart(mods[i].Dir)].VersionInfo
		checkVersion(mods[i].GoMod.Module, mods[i].Version)
		v.unchecked(a.Name, "module "+mods[i].GoMod.Module+" version", "%s taken from the SBOM: a nested module's version comes from its own tags; needs %s", mods[i].Version, exitcode.Ref("Repo"))
	}
	id := &Identity{
		Commit:    &Commit{ID: m.Commit, Tree: m.Tree, CommitterTime: mt.Unix()},
		Tag:       m.Tag,
		Version:   m.Version,
		GoVersion: srcVersion,
	}
	want, err := buildSBOM(sbomInput{Contract: &c, ID: id, ArchiveName: archive.Name, ArchiveSHA256: archive.SHA256, Modules: mods, Stray: stray})
	if err != nil {
		v.problem(a.Name, "cannot recompute from the archive: %v", err)
		return
	}
	if !bytes.Equal(want, data) {
		v.problem(a.Name, "is not the SBOM the archive's go.mod/go.sum files give: %s", sbomDiff(want, data))
	}
}

// sbomDiff names the first package or relationship that differs between
// the recomputed SBOM and the one in the release.
func sbomDiff(want, got []byte) string {
	var w, g SPDXDocument
	if jsonx.Unmarshal(want, "sbom", &w) != nil || jsonx.Unmarshal(got, "sbom", &g) != nil {
		return "unreadable"
	}
	key := func(p SPDXPackage) string { b, _ := jsonx.MarshalIndent(p); return string(b) }
	wk := map[string]bool{}
	for _, p := range w.Packages {
		wk[key(p)] = true
	}
	gk := map[string]bool{}
	for _, p := range g.Packages {
		gk[key(p)] = true
		if !wk[key(p)] {
			return fmt.Sprintf("package %s %s is not what the archive gives", p.Name, p.VersionInfo)
		}
	}
	for _, p := range w.Packages {
		if !gk[key(p)] {
			return fmt.Sprintf("package %s %s is missing", p.Name, p.VersionInfo)
		}
	}
	if len(w.Relationships) != len(g.Relationships) {
		return fmt.Sprintf("%d relationships, the archive gives %d", len(g.Relationships), len(w.Relationships))
	}
	for i := range w.Relationships {
		if w.Relationships[i] != g.Relationships[i] {
			r := g.Relationships[i]
			return fmt.Sprintf("relationship %s %s %s is not what the archive gives", r.SPDXElementID, r.RelationshipType, r.RelatedSPDXElement)
		}
	}
	return "the document differs (header, comment or order)"
}

func (v *verifier) notes(path string, a Artifact) {
	data, err := os.ReadFile(path)
	if err != nil {
		v.problem(a.Name, "cannot read: %v", err)
		return
	}
	m := v.manifest
	if !bytes.HasPrefix(data, []byte("# "+m.Name+" "+m.Version+"\n")) || !bytes.Contains(data, []byte("`"+m.Commit+"`")) {
		v.problem(a.Name, "does not open with the release's name, version and commit")
	}
	v.unchecked(a.Name, "changes listed", "the commits since the previous release come from the history; needs %s", exitcode.Ref("Repo"))
}

func (v *verifier) provenance(path string, a Artifact) {
	data, err := os.ReadFile(path)
	if err != nil {
		v.problem(a.Name, "cannot read: %v", err)
		return
	}
	var st Statement
	if err := jsonx.Unmarshal(data, "provenance", &st); err != nil {
		v.problem(a.Name, "%v", err)
		return
	}
	if canon, err := jsonx.MarshalIndent(&st); err != nil || !bytes.Equal(canon, data) {
		v.problem(a.Name, "not in canonical form")
	}
	m := v.manifest
	var want []string
	for _, x := range provenanceSubjects(m.Artifacts) {
		want = append(want, x.Name+"="+x.Digest["sha256"])
	}
	var got []string
	for _, s := range st.Subject {
		got = append(got, s.Name+"="+s.Digest["sha256"])
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(want, got) {
		v.problem(a.Name, "subjects %v are not the release's artifacts %v", got, want)
	}
	if ip := st.Predicate.BuildDefinition.InternalParameters; (m.Go != "") != (ip != nil) || ip != nil && ip.Toolchain != m.Go {
		v.problem(a.Name, "does not name the toolchain %q that built the binaries", m.Go)
	}
	if c := v.releaseContract(); c != nil {
		wb, _ := json.Marshal(c.Binaries)
		gb, _ := json.Marshal(st.Predicate.BuildDefinition.ExternalParameters.Binaries)
		if !bytes.Equal(wb, gb) {
			v.problem(a.Name, "binaries' build parameters %s are not the contract's %s", gb, wb)
		}
	}
	p := st.Predicate.BuildDefinition.ExternalParameters
	if st.Type != InTotoStatementType || st.PredicateType != SLSAProvenanceType ||
		p.Commit != m.Commit || p.Tag != m.Tag || p.Version != m.Version || p.ContractSHA256 != m.Contract.SHA256 ||
		!sourceIs(st.Predicate.BuildDefinition.ResolvedDependencies, m) {
		v.problem(a.Name, "does not describe this release's commit, tag, version and contract")
	}
}

// sourceIs reports whether the provenance's only dependency is the
// manifest's commit and tree.
func sourceIs(deps []ResourceDescriptor, m *Manifest) bool {
	if len(deps) == 0 || deps[0].Name != "source" || deps[0].Digest["gitCommit"] != m.Commit || deps[0].Digest["gitTree"] != m.Tree {
		return false
	}
	if m.Go == "" {
		return len(deps) == 1
	}
	return len(deps) == 2 && deps[1].Name == "toolchain" && deps[1].URI == "https://go.dev/dl/#"+m.Go
}

// rebuild builds the manifest's commit again and compares every file.
func (v *verifier) rebuild(ctx context.Context, repoDir string) error {
	m := v.manifest
	r, err := OpenRepo(ctx, repoDir)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp, err := os.MkdirTemp("", "artrelease-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if v.contractFile == "" && v.archiveRead {
		if c := v.treeData[ContractPath]; c == nil || sha256Hex(c) != m.Contract.SHA256 {
			fe := exitcode.Fieldf(exitcode.Failed, "ContractFile", "", "built under a contract (sha256 %s) that is not the commit's release.json: pass the file it was built with as %s FILE",
				m.Contract.SHA256, exitcode.Ref("ContractFile"))
			v.rep.Problems = append(v.rep.Problems, Problem{File: ManifestName, Msg: fe.Error(), Err: fe})
			return nil
		}
	}
	ref := m.Commit
	if m.Tag != "" {
		ref = "refs/tags/" + m.Tag
	}
	_, hasProv := m.Artifact(ArtifactProvenance)
	if _, err := buildInto(ctx, r, BuildOptions{Ref: ref, Provenance: hasProv, ContractFile: v.contractFile, previous: &m.PreviousTag}, tmp); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if errors.Is(err, ErrIncompleteClone) {
			// Not a verdict on the release: the clone cannot rebuild it.
			return err
		}
		v.problem(".", "rebuild from %s failed: %v", repoDir, err)
		return nil
	}
	rm, err := os.ReadFile(filepath.Join(tmp, ManifestName))
	if err != nil {
		return err
	}
	var again Manifest
	if err := jsonx.Decode(rm, "manifest", &again); err != nil {
		return err
	}
	if again.Commit != m.Commit {
		v.problem(ManifestName, "the rebuild resolved %s to commit %s, not %s", ref, again.Commit, m.Commit)
	}
	names := []string{ManifestName, SumsName}
	for _, a := range m.Artifacts {
		names = append(names, a.Name)
	}
	for _, name := range names {
		got, err1 := fileSHA256(filepath.Join(v.dir, name))
		want, err2 := fileSHA256(filepath.Join(tmp, name))
		if err1 != nil || err2 != nil || got != want {
			v.problem(name, "differs from a rebuild of commit %s", m.Commit[:12])
		}
	}
	if a, ok := m.Artifact(ArtifactArchive); ok {
		b, _ := again.Artifact(ArtifactArchive)
		if a.TarSHA256 == b.TarSHA256 && a.SHA256 != b.SHA256 {
			v.problem(a.Name, "the tar is identical but the gzip bytes differ: built by a different Go release's compress/gzip?")
		}
	}
	return nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
