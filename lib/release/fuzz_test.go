package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// FuzzDecodeContract: any input either decodes to a contract that
// validates, or fails as invalid input (exit 2) — never a panic, never
// another exit code.
func FuzzDecodeContract(f *testing.F) {
	f.Add([]byte(testContract))
	f.Add([]byte(`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"a","license":"MIT","artifacts":["archive"],"version":{"tag_prefix":"release/"}}`))
	f.Add([]byte(`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"a","license":"(MIT OR Apache-2.0) AND BSD-3-Clause"}`))
	f.Add([]byte(`{"name":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeContract(data)
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("DecodeContract error with exit %d: %v", exitcode.Of(err), err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded contract does not validate: %v", err)
		}
	})
}

// FuzzDecodeManifest: a manifest that decodes re-encodes to a document that
// decodes to the same value.
func FuzzDecodeManifest(f *testing.F) {
	a := strings.Repeat("a", 64)
	f.Add([]byte(`{"apiVersion":"art/v1alpha1","kind":"ReleaseManifest","name":"x","version":"1.0.0","commit":"` + a[:40] + `","tree":"` + a[:40] + `","commit_time":"2026-01-02T15:04:05Z","contract":{"apiVersion":"art/v1alpha1","sha256":"` + a + `"},"artifacts":[{"name":"x-1.0.0.tar.gz","kind":"archive","size":1,"sha256":"` + a + `","tar_size":2,"tar_sha256":"` + a + `"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Manifest
		if err := jsonx.Decode(data, "manifest", &m); err != nil {
			return
		}
		again, err := jsonx.MarshalIndent(&m)
		if err != nil {
			t.Fatal(err)
		}
		var m2 Manifest
		if err := jsonx.Decode(again, "manifest", &m2); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v\n%s", err, again)
		}
		third, _ := jsonx.MarshalIndent(&m2)
		if !bytes.Equal(again, third) {
			t.Fatalf("encoding is not stable:\n%s\n%s", again, third)
		}
	})
}

// FuzzParseSums: whatever ParseSums accepts, FormatSums writes back
// byte-for-byte (the canonical form is the only form).
func FuzzParseSums(f *testing.F) {
	a := strings.Repeat("a", 64)
	f.Add([]byte(a + "  NOTES.md\n" + a + "  manifest.json\n"))
	f.Add([]byte(a + " *x\n"))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sums, err := ParseSums(data)
		if err != nil {
			return
		}
		if got := FormatSums(sums); !bytes.Equal(got, data) {
			t.Fatalf("FormatSums(ParseSums(%q)) = %q", data, got)
		}
	})
}

// FuzzParseChange: never panics, and a conventional subject's summary is
// never empty.
func FuzzParseChange(f *testing.F) {
	for _, s := range []string{"feat(x)!: y", "fix: z\n\nBREAKING CHANGE: q", "plain", "", "a(b)(c): d", "\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		ch := ParseChange(msg)
		if ch.Type != "" && strings.TrimSpace(ch.Summary) == "" {
			t.Fatalf("ParseChange(%q) = %+v: conventional with an empty summary", msg, ch)
		}
		if strings.ContainsAny(ch.Summary, "\n") {
			t.Fatalf("ParseChange(%q): summary spans lines: %q", msg, ch.Summary)
		}
	})
}

// FuzzParseGoMod: go.mod and go.sum from a tree are untrusted input;
// errors are invalid input (exit 2), and accepted modules are sorted with
// checksums SPDX can carry.
func FuzzParseGoMod(f *testing.F) {
	f.Add([]byte("module x\n\nrequire a.com/b v1.0.0 // indirect\n"), []byte("a.com/b v1.0.0 h1:AczMIuUHxSR0hRDEKtoZDl7N2l0fz05lcIkCIEvW/sA=\n"))
	f.Add([]byte("module x\nreplace a.com/b => ../b\nrequire a.com/b v1.0.0\n"), []byte(""))
	f.Fuzz(func(t *testing.T, mod, sum []byte) {
		gm, err := ParseGoMod(mod, sum)
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("exit %d: %v", exitcode.Of(err), err)
			}
			return
		}
		for i, m := range gm.Modules {
			if i > 0 && gm.Modules[i-1].Path > m.Path {
				t.Fatalf("modules not sorted: %v", gm.Modules)
			}
			if m.H1 != "" {
				if _, err := h1Hex(m.H1); err != nil {
					t.Fatalf("accepted a bad h1: %v", err)
				}
			}
		}
	})
}

// FuzzVerifyArchive: verify reads archives an attacker may have made; any
// bytes give a list of problems, never a panic, and an archive verify
// accepts has every entry under the top directory.
func FuzzVerifyArchive(f *testing.F) {
	var good bytes.Buffer
	zw := gzip.NewWriter(&good)
	tw := tar.NewWriter(zw)
	mt := time.Unix(baseTime, 0)
	tw.WriteHeader(&tar.Header{Name: "x-1.0.0/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mt})
	tw.WriteHeader(&tar.Header{Name: "x-1.0.0/a", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2, ModTime: mt})
	tw.Write([]byte("a\n"))
	tw.WriteHeader(&tar.Header{Name: "x-1.0.0/l", Typeflag: tar.TypeSymlink, Mode: 0o777, Linkname: "a", ModTime: mt})
	tw.Close()
	zw.Close()
	f.Add(good.Bytes())
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add([]byte("not gzip"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "x-1.0.0.tar.gz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		v := &verifier{dir: dir, rep: &VerifyReport{}, manifest: &Manifest{
			Name: "x", Version: "1.0.0", CommitTime: commitTime(mt),
		}}
		a := Artifact{Name: "x-1.0.0.tar.gz", Kind: ArtifactArchive}
		v.archive(path, a)
		// The tar digest cannot match the empty one in a, so exactly the
		// digest problem is expected of a well-formed archive; any other
		// problem must come with a reason, and nothing may panic.
		for _, p := range v.rep.Problems {
			if p.Msg == "" {
				t.Fatal("problem without a message")
			}
		}
		if bytes.Equal(data, good.Bytes()) && (len(v.rep.Problems) != 1 || !strings.Contains(v.rep.Problems[0].Msg, "uncompressed tar is")) {
			t.Fatalf("a well-formed archive: problems %v, want only the digest", v.rep.Problems)
		}
	})
}

// FuzzCheckGitPath: the tree-path check never panics, and whatever it
// accepts has no component that is ".git" in any case (with trailing dots
// or spaces), "." or "..", and no empty component.
func FuzzCheckGitPath(f *testing.F) {
	for _, s := range []string{".git/config", "a/.GIT", ".git.", "git~1", ".g\u200cit", "a\\.git", "ok/file.go", "..", "a//b", ".gitmodules", "caf\xe9"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, p string, symlink bool) {
		mode := uint32(0o100644)
		if symlink {
			mode = modeSymlink
		}
		if checkGitPath(p, mode) != nil {
			return
		}
		for _, el := range strings.Split(p, "/") {
			trimmed := strings.TrimRight(el, ". ")
			if el == "" || el == "." || el == ".." || strings.EqualFold(trimmed, ".git") {
				t.Fatalf("accepted %q (component %q)", p, el)
			}
		}
	})
}

// FuzzParsePlatform: a platform that parses prints back as itself.
func FuzzParsePlatform(f *testing.F) {
	for _, s := range []string{"linux/amd64", "linux/arm/7", "linux/amd64/v3", "windows/arm64", "linux", "/", "a/b/c/d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := ParsePlatform(s)
		if ok && p.String() != s {
			t.Fatalf("%q parsed as %q", s, p.String())
		}
	})
}

// FuzzReadBinArchive: any bytes as a binary archive (tar.gz or zip) are
// read or refused with an error, never a panic; what writeBinArchive
// writes always reads back.
func FuzzReadBinArchive(f *testing.F) {
	dir := f.TempDir()
	bin := filepath.Join(dir, "x")
	os.WriteFile(bin, []byte("\x7fELF binary"), 0o755)
	mt := time.Unix(1767366245, 0).UTC()
	for _, z := range []bool{false, true} {
		var b bytes.Buffer
		if err := writeBinArchive(&b, z, []binMember{{Name: "x", Mode: 0o755, Path: bin}}, mt); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes(), z)
	}
	f.Fuzz(func(t *testing.T, data []byte, z bool) {
		p := filepath.Join(t.TempDir(), "a")
		os.WriteFile(p, data, 0o644)
		files, names, err := readBinArchive(p, z, mt, 1<<20)
		if err == nil && len(files) != len(names) {
			t.Fatalf("%d files, %d names", len(files), len(names))
		}
	})
}
