package release

import (
	"archive/tar"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// extractEverywhere extracts an archive with bsdtar (libarchive) and GNU
// tar, as users will, and requires each to succeed and to produce exactly
// the archive's entries: names (bytes), types, exec bits, contents and
// symlink targets. Every archive a test builds goes through it (build).
func extractEverywhere(t testing.TB, archive string) {
	t.Helper()
	want := map[string]string{}
	for _, e := range readTarGz(t, archive) {
		want[strings.TrimSuffix(e.Name, "/")] = describeEntry(e.Type, e.Mode&0o100 != 0, e.Data, e.Linkname)
	}
	for _, tool := range []string{"bsdtar", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not on PATH: install libarchive-tools (bsdtar) and tar", tool)
		}
		dir := t.TempDir()
		cmd := exec.Command(tool, "-x", "-f", archive, "-C", dir)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s -x %s: %v\n%s", tool, filepath.Base(archive), err, out)
		}
		got := map[string]string{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			switch {
			case fi.IsDir():
				got[rel] = describeEntry(tar.TypeDir, true, "", "")
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				got[rel] = describeEntry(tar.TypeSymlink, true, "", target)
			default:
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				got[rel] = describeEntry(tar.TypeReg, fi.Mode()&0o100 != 0, string(b), "")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: %q extracted as %q, want %q", tool, name, got[name], w)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: extracted %q, which is not in the archive", tool, name)
			}
		}
	}
}

func describeEntry(typ byte, exec bool, data, link string) string {
	switch typ {
	case tar.TypeDir:
		return "dir"
	case tar.TypeSymlink:
		return "symlink -> " + link
	}
	if exec {
		return "exec file " + data
	}
	return "file " + data
}

// TestNonUTF8NamesExtract: names that are not UTF-8 (Latin-1 bytes, a
// directory of raw bytes, a symlink whose target is not UTF-8) are written
// with hdrcharset=BINARY, extracted byte for byte by bsdtar and GNU tar
// (build's extractEverywhere), equal to git archive's names, and verify.
func TestNonUTF8NamesExtract(t *testing.T) {
	r, commit := plumbRepo(t,
		plumbFile{path: "caf\xe9.txt", mode: 0o100644, data: "latin-1\n"},
		plumbFile{path: "\xff\xfe/inner", mode: 0o100755, data: "#!/bin/sh\n"},
		plumbFile{path: "link", mode: modeSymlink, data: "caf\xe9.txt"},
		plumbFile{path: "ok-ü.txt", mode: 0o100644, data: "utf-8\n"},
	)
	out, m := build(t, r.dir, "HEAD", false)
	a, _ := m.Artifact(ArtifactArchive)
	got := readTarGz(t, filepath.Join(out, a.Name))
	want := gitArchive(t, r.dir, commit, m.Name+"-"+m.Version)
	if !slices.Equal(names(got), names(want)) {
		t.Errorf("names %q\ngit archive %q", names(got), names(want))
	}
	if rep, err := Verify(t.Context(), VerifyOptions{Dir: out}); err != nil {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestGitattributesNotApplied documents a decision: .gitattributes
// conversions (text, eol=crlf, export-ignore, export-subst) are not applied,
// so the archive holds the blobs exactly as the manifest's tree names them.
// git archive converts *.bat to CRLF here; artrelease keeps the LF bytes —
// and that one file is the only difference.
func TestGitattributesNotApplied(t *testing.T) {
	r, commit := plumbRepo(t,
		plumbFile{path: ".gitattributes", mode: 0o100644, data: "*.bat eol=crlf\n*.txt text\n"},
		plumbFile{path: "run.bat", mode: 0o100644, data: "echo one\necho two\n"},
		plumbFile{path: "notes.txt", mode: 0o100644, data: "plain\n"},
	)
	out, m := build(t, r.dir, "HEAD", false)
	got := readTarGz(t, filepath.Join(out, archiveName(m.Name, m.Version)))
	want := gitArchive(t, r.dir, commit, m.Name+"-"+m.Version)
	if len(got) != len(want) {
		t.Fatalf("entries %v, git archive %v", names(got), names(want))
	}
	for i := range got {
		isBat := strings.HasSuffix(got[i].Name, "/run.bat")
		switch {
		case isBat && got[i].Data != "echo one\necho two\n":
			t.Errorf("run.bat = %q, want the blob's LF bytes", got[i].Data)
		case isBat && want[i].Data != "echo one\r\necho two\r\n":
			t.Errorf("git archive's run.bat = %q: expected CRLF (the documented difference)", want[i].Data)
		case !isBat && got[i] != want[i]:
			t.Errorf("%s differs from git archive: %+v vs %+v", got[i].Name, got[i], want[i])
		}
	}
}
