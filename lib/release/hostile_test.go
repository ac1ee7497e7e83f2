package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// TestHostileTreePathsRefused builds commits whose trees hold names git
// refuses (fsck hasDotgit, hasDot, hasDotdot, hasEmptyName, fullPathname,
// gitmodulesSymlink) and requires build to exit 2 naming the path, with
// nothing written.
func TestHostileTreePathsRefused(t *testing.T) {
	nested := func(p string) []plumbFile {
		return []plumbFile{{path: p, mode: 0o100644, data: "[core]\n\tfsmonitor = touch pwned\n"}}
	}
	cases := []struct {
		name  string
		files []plumbFile
		raw   []rawEntry // extra root entries, named verbatim
		want  string     // the path the error names
	}{
		{name: ".git/config", files: nested(".git/config"), want: `".git"`},
		{name: ".GIT/config", files: nested(".GIT/config"), want: `".GIT"`},
		{name: "nested .Git", files: nested("src/.Git/config"), want: `"src/.Git"`},
		{name: ".git. (NTFS trailing dot)", files: nested(".git./config"), want: `".git."`},
		{name: ".git + space (NTFS)", files: nested(".git /config"), want: `".git "`},
		{name: "git~1 (NTFS short name)", files: nested("GIT~1/config"), want: `"GIT~1"`},
		{name: ".git::$INDEX_ALLOCATION (NTFS stream)", files: nested(".git::$INDEX_ALLOCATION/config"), want: `".git::$INDEX_ALLOCATION"`},
		{name: "backslash (NTFS separator)", files: nested(`a\.git/config`), want: `"a\\.git"`},
		{name: "zero-width joiner (HFS+)", files: nested(".g\u200cit/config"), want: `".g\u200cit"`},
		{name: "BOM (HFS+)", files: nested("\ufeff.GiT/config"), want: `"\ufeff.GiT"`},
		{name: ".gitmodules symlink", files: []plumbFile{{path: ".gitmodules", mode: modeSymlink, data: "/etc/passwd"}}, want: `".gitmodules"`},
		{name: "dot-dot", raw: []rawEntry{{0o100644, "..", ""}}, want: `".."`},
		{name: "dot", raw: []rawEntry{{0o100644, ".", ""}}, want: `"."`},
		{name: "empty name", raw: []rawEntry{{0o100644, "", ""}}, want: `""`},
		{name: "slash in a name", raw: []rawEntry{{0o100644, "a/b", ""}}, want: `"a/b"`},
		{name: "absolute", raw: []rawEntry{{0o100644, "/etc", ""}}, want: `"/etc"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRepo(t)
			files := append([]plumbFile{{path: "release.json", mode: 0o100644, data: plainContract}}, tc.files...)
			tree := r.plumbTree(files)
			if tc.raw != nil {
				blob := r.hashObject(typeBlob, []byte("x\n"))
				entries := []rawEntry{{0o100644, "release.json", r.hashObject(typeBlob, []byte(plainContract))}}
				for _, e := range tc.raw {
					e.oid = blob
					entries = append(entries, e)
				}
				tree = r.rawTree(entries)
			}
			r.commitTree(tree, "hostile")
			out := filepath.Join(t.TempDir(), "dist")
			_, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "HEAD", Out: out})
			if err == nil {
				t.Fatal("build passed a hostile tree")
			}
			if !errors.Is(err, ErrHostilePath) || exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("err = %v (exit %d), want ErrHostilePath, exit 2", err, exitcode.Of(err))
			}
			if !strings.Contains(err.Error(), "tree path "+tc.want) {
				t.Errorf("err = %v, want it to name %s", err, tc.want)
			}
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Errorf("a refused build left %s", out)
			}
		})
	}
}

// TestNearDotGitNamesAccepted: names git accepts stay accepted.
func TestNearDotGitNamesAccepted(t *testing.T) {
	var files []plumbFile
	for _, n := range []string{".gitignore", ".github/workflows/ci.yml", ".gitx", "git~2", ".git-blame-ignore-revs", "x.git", "a.git/b", "..a", "...", ".g"} {
		files = append(files, plumbFile{path: n, mode: 0o100644, data: n + "\n"})
	}
	files = append(files, plumbFile{path: ".gitattributes", mode: modeSymlink, data: "x.git"})
	r, commit := plumbRepo(t, files...)
	out, m := build(t, r.dir, "HEAD", false)
	got := readTarGz(t, filepath.Join(out, archiveName(m.Name, m.Version)))
	want := gitArchive(t, r.dir, commit, m.Name+"-"+m.Version)
	if !slices.Equal(names(got), names(want)) {
		t.Errorf("archive %v\ngit archive %v", names(got), names(want))
	}
}

// TestEmptyTreesOmitted: an empty subtree (and a directory holding only
// empty ones) is left out, as git archive leaves it out.
func TestEmptyTreesOmitted(t *testing.T) {
	r, commit := plumbRepo(t,
		plumbFile{path: "empty", mode: modeTree},
		plumbFile{path: "deep/er/est", mode: modeTree},
		plumbFile{path: "kept/file", mode: 0o100644, data: "f\n"},
		plumbFile{path: "kept/void", mode: modeTree},
	)
	out, m := build(t, r.dir, "HEAD", false)
	prefix := m.Name + "-" + m.Version
	got := names(readTarGz(t, filepath.Join(out, archiveName(m.Name, m.Version))))
	want := names(gitArchive(t, r.dir, commit, prefix))
	if !slices.Equal(got, want) {
		t.Errorf("archive %v\ngit archive %v", got, want)
	}
	for _, n := range got {
		if strings.Contains(n, "empty") || strings.Contains(n, "deep") || strings.Contains(n, "void") {
			t.Errorf("empty directory %s archived", n)
		}
	}
	if rep, err := Verify(context.Background(), VerifyOptions{Dir: out}); err != nil {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestVerifyRefusesHostileArchive: an attacker who adds .git/config to an
// archive and rewrites every digest (tar, gzip, manifest, SBOM checksum and
// namespace, SHA256SUMS) is still refused, by the path alone.
func TestVerifyRefusesHostileArchive(t *testing.T) {
	r := fixtureRepo(t)
	for _, evil := range []string{".git/config", "sub/.GIT/hooks/post-checkout", "git~1/config", ".git./config"} {
		t.Run(evil, func(t *testing.T) {
			good, m := build(t, r.dir, "HEAD", false)
			dir := copyDir(t, good)
			injectArchiveFile(t, dir, m, evil, "[core]\n\tfsmonitor = touch pwned\n")
			rep, err := Verify(context.Background(), VerifyOptions{Dir: dir})
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("verify passed an archive holding %s: %v %+v", evil, err, rep)
			}
			found := false
			for _, p := range rep.Problems {
				found = found || strings.Contains(p.Msg, ErrHostilePath.Error())
			}
			if !found {
				t.Errorf("no problem names the hostile path: %+v", rep.Problems)
			}
		})
	}
}

// injectArchiveFile rewrites the release's archive with one more file (and
// its parent directories) in sorted position, then recomputes every digest
// an attacker can: the manifest's sizes and sums, the SBOM's source
// checksum and namespace, SHA256SUMS.
func injectArchiveFile(t *testing.T, dir string, m *Manifest, rel, data string) {
	t.Helper()
	a, _ := m.Artifact(ArtifactArchive)
	prefix := m.Name + "-" + m.Version + "/"
	f, err := os.Open(filepath.Join(dir, a.Name))
	if err != nil {
		t.Fatal(err)
	}
	zr, _ := gzip.NewReader(f)
	tr := tar.NewReader(zr)
	type member struct {
		h    *tar.Header
		data []byte
	}
	var ms []member
	mt, _ := time.Parse(time.RFC3339, m.CommitTime)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		b := new(bytes.Buffer)
		b.ReadFrom(tr)
		ms = append(ms, member{h, b.Bytes()})
	}
	f.Close()
	have := map[string]bool{}
	for _, x := range ms {
		have[x.h.Name] = true
	}
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		d := prefix + strings.Join(parts[:i], "/") + "/"
		if !have[d] {
			ms = append(ms, member{&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mt}, nil})
		}
	}
	ms = append(ms, member{&tar.Header{Name: prefix + rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: mt}, []byte(data)})
	slices.SortFunc(ms, func(x, y member) int { return strings.Compare(x.h.Name, y.h.Name) })
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, x := range ms {
		x.h.Format = tar.FormatUnknown
		x.h.PAXRecords = nil
		if err := tw.WriteHeader(x.h); err != nil {
			t.Fatal(err)
		}
		tw.Write(x.data)
	}
	tw.Close()
	var gzBuf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gzBuf, GzipLevel)
	zw.Write(tarBuf.Bytes())
	zw.Close()
	writeFile(t, filepath.Join(dir, a.Name), gzBuf.Bytes())
	tsum := sha256.Sum256(tarBuf.Bytes())
	gsum := sha256.Sum256(gzBuf.Bytes())
	for i := range m.Artifacts {
		if m.Artifacts[i].Kind == ArtifactArchive {
			m.Artifacts[i].TarSize, m.Artifacts[i].TarSHA256 = int64(tarBuf.Len()), hex.EncodeToString(tsum[:])
		}
	}
	if s, ok := m.Artifact(ArtifactSBOM); ok {
		var doc SPDXDocument
		b, _ := os.ReadFile(filepath.Join(dir, s.Name))
		if err := jsonx.Unmarshal(b, "sbom", &doc); err != nil {
			t.Fatal(err)
		}
		doc.Packages[0].Checksums[0].ChecksumValue = hex.EncodeToString(gsum[:])
		out, err := encodeSBOM(doc)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, s.Name), out)
	}
	mb, _ := jsonx.MarshalIndent(m)
	writeFile(t, filepath.Join(dir, ManifestName), mb)
	resign(t, dir, true)
}
