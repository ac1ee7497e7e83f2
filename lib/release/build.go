package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// BuildOptions says what to build and where.
type BuildOptions struct {
	// Repo is the repository directory (default ".").
	Repo string
	// Ref is the revision to release: a tag, a branch, HEAD, a commit id.
	Ref string
	// ContractFile overrides release.json from the tree with a file on disk.
	ContractFile string
	// Out is the output directory. It must not exist or be empty, unless
	// Force, which replaces it whole.
	Out   string
	Force bool
	// Provenance adds the in-toto statement.
	Provenance bool
	// Progress, when set, receives one line per step (the CLI passes stderr
	// on a terminal).
	Progress func(format string, args ...any)
	// previous, when set, is the previous release tag to use (verify's
	// rebuild passes the manifest's) instead of the one found from tags.
	previous *string
}

// Artifact file names.
func archiveName(name, version string) string    { return name + "-" + version + ".tar.gz" }
func sbomName(name, version string) string       { return name + "-" + version + ".spdx.json" }
func provenanceName(name, version string) string { return name + "-" + version + ".intoto.json" }

// Build writes a release of o.Ref into o.Out and returns its manifest. The
// artifacts are written and fsynced in a temporary directory beside o.Out,
// which is renamed into place only when every file is complete: an
// interrupted or failed build leaves o.Out as it was.
func Build(ctx context.Context, o BuildOptions) (*Manifest, error) {
	if o.Ref == "" {
		return nil, exitcode.Fieldf(exitcode.Usage, "Ref", "", "build: %s is required", exitcode.Ref("Ref"))
	}
	if o.Out == "" {
		return nil, exitcode.Fieldf(exitcode.Usage, "Out", "", "build: %s is required", exitcode.Ref("Out"))
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, fmt.Errorf("output directory %s: %w", o.Out, err)
	}
	if err := checkOut(out, o.Force); err != nil {
		return nil, err
	}
	r, err := OpenRepo(ctx, o.Repo)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("output directory %s: %w", o.Out, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("output directory %s: %w", o.Out, err)
	}
	published := false
	defer func() {
		if !published {
			_ = os.RemoveAll(tmp)
		}
	}()
	m, err := buildInto(ctx, r, o, tmp)
	if ctx.Err() != nil {
		// Whatever failed first, the cause is the cancellation (exit 130
		// for a signal): report that, not the killed git process.
		return nil, context.Cause(ctx)
	}
	if err != nil {
		return nil, outputError(o.Out, tmp, err)
	}
	if err := publish(tmp, out, o.Force); err != nil {
		return nil, err
	}
	published = true
	return m, nil
}

// outputError names the output directory in a failure to write a file of
// the release (a full disk, a failing device): the file was in tmp, a name
// the user never gave, gone by the time they read the error. Other errors
// (an unknown ref, a bad contract) are not about the output and pass as
// they are.
func outputError(out, tmp string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Path, tmp+string(filepath.Separator)) {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	return err
}

// checkOut refuses an output path that is not a directory, or a non-empty
// one without force.
func checkOut(out string, force bool) error {
	fi, err := os.Lstat(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	if !fi.IsDir() {
		return exitcode.Fieldf(exitcode.Conflict, "Out", out, "output directory %s: exists and is not a directory", out)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	if len(entries) > 0 && !force {
		return exitcode.WithHint(fmt.Errorf("output directory %s: %w (%d entries)", out, ErrOutExists, len(entries)),
			"choose an empty or new directory, or pass %s to replace it", exitcode.Ref("Force"))
	}
	return nil
}

// publish renames the finished temporary directory to out. An empty out is
// removed first; a non-empty one (with force) is moved aside, replaced and
// then deleted, so out never holds a mix of two releases.
func publish(tmp, out string, force bool) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	if err := checkOut(out, force); err != nil {
		return err
	}
	var old string
	if _, err := os.Lstat(out); err == nil {
		if err := os.Remove(out); err != nil {
			// Not empty: force was given (checkOut passed).
			old = tmp + ".old"
			if err := os.Rename(out, old); err != nil {
				return fmt.Errorf("output directory %s: %w", out, err)
			}
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		if old != "" {
			_ = os.Rename(old, out)
		}
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	if err := fsx.SyncDir(filepath.Dir(out)); err != nil {
		return err
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("remove the replaced %s: %w", out, err)
		}
	}
	return nil
}

// loadContract reads the contract: from the file named by the options, or
// release.json in the tree at the commit.
func loadContract(r *Repo, o BuildOptions, tree []TreeEntry, commit string) (*Contract, []byte, error) {
	var data []byte
	var where string
	if o.ContractFile != "" {
		b, err := os.ReadFile(o.ContractFile)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil, fmt.Errorf("contract %s: %w", o.ContractFile, ErrNotFound)
			}
			return nil, nil, fmt.Errorf("contract %s: %w", o.ContractFile, err)
		}
		data, where = b, o.ContractFile
	} else {
		e, ok := findEntry(tree, ContractPath)
		if !ok || e.Type != typeBlob || e.Mode == modeSymlink {
			return nil, nil, exitcode.WithHint(fmt.Errorf("contract %s: %w in the tree of commit %s", ContractPath, ErrNotFound, commit[:12]),
				"commit a release.json (kind ReleaseContract) or pass %s FILE", exitcode.Ref("ContractFile"))
		}
		obj, err := r.ReadObject(e.OID)
		if err != nil {
			return nil, nil, err
		}
		data, where = obj.Data, ContractPath+" at "+commit[:12]
	}
	c, err := DecodeContract(data)
	if err != nil {
		return nil, nil, fmt.Errorf("contract %s: %w", where, err)
	}
	return c, data, nil
}

func findEntry(tree []TreeEntry, path string) (TreeEntry, bool) {
	for _, e := range tree {
		if e.Path == path {
			return e, true
		}
	}
	return TreeEntry{}, false
}

// readTreeFile returns a regular file's bytes from the tree, or nil.
func readTreeFile(r *Repo, tree []TreeEntry, path string) ([]byte, bool, error) {
	e, ok := findEntry(tree, path)
	if !ok || e.Type != typeBlob || e.Mode == modeSymlink {
		return nil, false, nil
	}
	obj, err := r.ReadObject(e.OID)
	if err != nil {
		return nil, false, err
	}
	return obj.Data, true, nil
}

// readTreeModules finds and parses the Go modules of a tree (moduleDirs),
// reading every go.mod, go.sum and go.work from the object database.
func readTreeModules(r *Repo, tree map[string]TreeEntry) ([]TreeModule, []StrayGoMod, error) {
	files := make(map[string]bool)
	for p, e := range tree {
		if e.Type == typeBlob && e.Mode != modeSymlink {
			files[p] = true
		}
	}
	read := func(p string) ([]byte, error) {
		e, ok := tree[p]
		if !ok || !files[p] {
			return nil, nil
		}
		obj, err := r.ReadObject(e.OID)
		return obj.Data, err
	}
	gowork, err := read("go.work")
	if err != nil {
		return nil, nil, err
	}
	dirs, work, err := moduleDirs(files, gowork)
	if err != nil {
		return nil, nil, err
	}
	return parseTreeModules(dirs, work, read)
}

// buildInto writes every artifact of the release into dir, an empty
// directory, and returns the manifest.
func buildInto(ctx context.Context, r *Repo, o BuildOptions, dir string) (*Manifest, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	commit, err := r.readRev(ctx, o.Ref)
	if err != nil {
		return nil, err
	}
	commitID := commit.ID
	if err := r.checkComplete(ctx, commitID, o.Ref); err != nil {
		return nil, err
	}
	// The tags reachable from the commit and the tree listing are two git
	// processes that need nothing from each other: run them together.
	// Every tag is needed too: the go command reads retractions at a
	// module's latest tag, and the notes look for the previous version
	// line beyond this commit's history.
	type tagsResult struct {
		tags []RefTag
		err  error
	}
	tagsCh := make(chan tagsResult, 1)
	allCh := make(chan tagsResult, 1)
	go func() {
		tags, err := r.Tags(ctx, commitID)
		tagsCh <- tagsResult{tags, err}
	}()
	go func() {
		tags, err := r.Tags(ctx, "")
		allCh <- tagsResult{tags, err}
	}()
	tree, err := r.ListTree(ctx, commit.Tree)
	tr, all := <-tagsCh, <-allCh
	if err != nil {
		return nil, err
	}
	if tr.err != nil {
		return nil, tr.err
	}
	if all.err != nil {
		return nil, all.err
	}
	contract, contractData, err := loadContract(r, o, tree, commitID)
	if err != nil {
		return nil, err
	}
	contractSum := sha256.Sum256(contractData)
	contractSHA := hex.EncodeToString(contractSum[:])
	id, err := identify(o.Ref, commit, tr.tags, contract.Version.Prefix())
	if err != nil {
		return nil, err
	}

	module := contract.Module
	gv := newGoVersioner(r, commit, tree, tr.tags, all.tags)
	mods, stray, err := readTreeModules(r, gv.tree)
	if err != nil {
		return nil, err
	}
	if len(mods) > 0 && mods[0].Dir == "" {
		root := mods[0].GoMod
		if module == "" {
			module = root.Module
		} else if module != root.Module {
			return nil, jsonx.Errorf("contract.module", "%q, but go.mod at %s declares %q", module, commitID[:12], root.Module)
		}
	}
	if module != "" {
		if err := id.nameGoVersion(gv, module); err != nil {
			return nil, err
		}
	}
	for i := range mods {
		if mods[i].Dir == "" {
			mods[i].Version = id.GoVersion
			continue
		}
		if mods[i].Version, err = gv.Version(mods[i].GoMod.Module, mods[i].Dir, ""); err != nil {
			return nil, err
		}
	}
	if o.previous != nil {
		err = r.setPrevious(ctx, id, *o.previous, tr.tags, all.tags)
	} else {
		err = r.previousRelease(ctx, id, tr.tags, contract.Version.Prefix())
	}
	if err != nil {
		return nil, err
	}
	progress("release %s %s from commit %s", contract.Name, id.Version, commitID[:12])
	if cl := contract.Notes.Changelog; cl != "" && contract.Wants(ArtifactNotes) {
		if _, ok, err := readTreeFile(r, tree, cl); err != nil {
			return nil, err
		} else if !ok {
			return nil, jsonx.Errorf("contract.notes.changelog", "%s is not a file in the tree of commit %s", cl, commitID[:12])
		}
	}

	m := &Manifest{
		TypeMeta:    jsonx.Meta(KindManifest),
		Name:        contract.Name,
		Version:     id.Version,
		Module:      module,
		Commit:      commitID,
		Tree:        commit.Tree,
		Tag:         id.Tag,
		PreviousTag: id.Previous,
		CommitTime:  commitTime(id.Time()),
		Contract:    ContractRef{APIVersion: contract.APIVersion, SHA256: contractSHA},
		// The second checksum file is named before the manifest is
		// written, so SHA256SUMS (which covers the manifest) names it too.
		ChecksumsFile: contract.ChecksumsFile,
	}
	prefix := contract.Name + "-" + id.Version

	// The archive.
	plan, omitted, err := planArchive(prefix, tree, contract.Submodules)
	if err != nil {
		return nil, err
	}
	m.OmittedSubmodules = omitted
	aname := archiveName(contract.Name, id.Version)
	progress("writing %s (%d entries)", aname, len(plan))
	arch, err := writeFileWith(dir, aname, func(w io.Writer) (any, error) {
		return writeArchive(w, r, plan, id.Time())
	})
	if err != nil {
		return nil, err
	}
	ar := arch.extra.(ArchiveResult)
	archive := Artifact{Name: aname, Kind: ArtifactArchive, Size: arch.size, SHA256: arch.sha256, TarSize: ar.TarSize, TarSHA256: ar.TarSHA256}
	m.Artifacts = append(m.Artifacts, archive)

	if contract.Wants(ArtifactSBOM) {
		sname := sbomName(contract.Name, id.Version)
		progress("writing %s", sname)
		c := *contract
		c.Module = module
		data, err := buildSBOM(sbomInput{Contract: &c, ID: id, ArchiveName: aname, ArchiveSHA256: archive.SHA256, Modules: mods, Stray: stray})
		if err != nil {
			return nil, err
		}
		a, err := writeArtifact(dir, sname, ArtifactSBOM, data)
		if err != nil {
			return nil, err
		}
		m.Artifacts = append(m.Artifacts, a)
	}

	if contract.Wants(ArtifactNotes) {
		progress("writing %s", NotesName)
		nc, err := noteCommits(ctx, r, commitID, id.NotesFrom)
		if err != nil {
			return nil, err
		}
		a, err := writeArtifact(dir, NotesName, ArtifactNotes, buildNotes(notesInput{Contract: contract, ID: id, Commits: nc}))
		if err != nil {
			return nil, err
		}
		m.Artifacts = append(m.Artifacts, a)
	}

	if len(contract.Binaries) > 0 {
		c := *contract
		c.Module = module
		bb, err := buildBinaries(ctx, dir, filepath.Join(dir, aname), &c, id, progress)
		if err != nil {
			return nil, err
		}
		m.Go = bb.GoVersion
		m.Artifacts = append(m.Artifacts, bb.Artifacts...)
	}

	if o.Provenance {
		pname := provenanceName(contract.Name, id.Version)
		progress("writing %s", pname)
		data, err := buildProvenance(id, contractSHA, contract, m.Go, m.Artifacts)
		if err != nil {
			return nil, err
		}
		a, err := writeArtifact(dir, pname, ArtifactProvenance, data)
		if err != nil {
			return nil, err
		}
		m.Artifacts = append(m.Artifacts, a)
	}

	mdata, err := jsonx.MarshalIndent(m)
	if err != nil {
		return nil, err
	}
	mf, err := writeArtifact(dir, ManifestName, "", mdata)
	if err != nil {
		return nil, err
	}
	sums := []Sum{{SHA256: mf.SHA256, Name: ManifestName}}
	for _, a := range m.Artifacts {
		sums = append(sums, Sum{SHA256: a.SHA256, Name: a.Name})
	}
	if _, err := writeArtifact(dir, SumsName, "", FormatSums(sums)); err != nil {
		return nil, err
	}
	if contract.ChecksumsFile != "" {
		if _, err := writeArtifact(dir, contract.ChecksumsFile, "", FormatSums(sums)); err != nil {
			return nil, err
		}
	}
	if err := fsx.SyncDir(dir); err != nil {
		return nil, err
	}
	progress("wrote %d files", len(sums)+1)
	return m, nil
}

type written struct {
	size   int64
	sha256 string
	extra  any
}

// writeFileWith creates dir/name (0644 whatever the umask: release files
// are for publishing), lets fill write it, and fsyncs it.
func writeFileWith(dir, name string, fill func(io.Writer) (any, error)) (written, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return written{}, fmt.Errorf("write %s: %w", name, err)
	}
	defer f.Close()
	hw := newHashingWriter(f)
	extra, err := fill(hw)
	if err != nil {
		return written{}, err
	}
	if err := f.Chmod(0o644); err != nil {
		return written{}, fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return written{}, fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return written{}, fmt.Errorf("write %s: %w", name, err)
	}
	return written{size: hw.n, sha256: hw.sum(), extra: extra}, nil
}

func writeArtifact(dir, name, kind string, data []byte) (Artifact, error) {
	w, err := writeFileWith(dir, name, func(w io.Writer) (any, error) {
		_, err := w.Write(data)
		return nil, err
	})
	if err != nil {
		return Artifact{}, err
	}
	return Artifact{Name: name, Kind: kind, Size: w.size, SHA256: w.sha256}, nil
}
