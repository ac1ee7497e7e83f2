package release

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"
)

// Fixtures built with git plumbing (git hash-object, git commit-tree), so a
// test can make trees no worktree can hold: names git refuses, empty
// subtrees, names that are not UTF-8. Nothing binary is committed to this
// repository; each test writes its objects into a fresh repository.

// plumbFile is one path of a plumbed tree: a blob (mode 100644, 100755,
// 120000) or, with mode 040000 and no data, an empty tree.
type plumbFile struct {
	path string
	mode uint32
	data string
}

// hashObject writes an object and returns its id. Trees are written with
// --literally so git's own object checks do not stop the hostile ones.
func (r *testRepo) hashObject(typ string, data []byte) string {
	r.t.Helper()
	args := []string{"-C", r.dir, "hash-object", "-w", "--stdin", "-t", typ}
	if typ == typeTree {
		args = append(args, "--literally")
	}
	cmd := exec.Command("git", args...)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git hash-object -t %s: %v", typ, err)
	}
	return strings.TrimSpace(string(out))
}

// rawTree writes one tree object from entries named exactly as given
// (a name may hold a slash or be "..": that is the point), sorted as git
// sorts tree entries.
type rawEntry struct {
	mode uint32
	name string
	oid  string
}

func (r *testRepo) rawTree(entries []rawEntry) string {
	r.t.Helper()
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].name, entries[j].name
		if entries[i].mode == modeTree {
			a += "/"
		}
		if entries[j].mode == modeTree {
			b += "/"
		}
		return a < b
	})
	var buf bytes.Buffer
	for _, e := range entries {
		raw, err := hex.DecodeString(e.oid)
		if err != nil {
			r.t.Fatal(err)
		}
		fmt.Fprintf(&buf, "%o %s\x00", e.mode, e.name)
		buf.Write(raw)
	}
	return r.hashObject(typeTree, buf.Bytes())
}

// plumbTree writes the nested trees holding files (paths split at "/")
// and returns the root tree id.
func (r *testRepo) plumbTree(files []plumbFile) string {
	r.t.Helper()
	type dir struct {
		entries []rawEntry
		subdirs map[string]bool
	}
	dirs := map[string]*dir{"": {subdirs: map[string]bool{}}}
	var ensure func(p string)
	ensure = func(p string) {
		if _, ok := dirs[p]; ok {
			return
		}
		dirs[p] = &dir{subdirs: map[string]bool{}}
		parent := path.Dir(p)
		if parent == "." {
			parent = ""
		}
		ensure(parent)
		dirs[parent].subdirs[path.Base(p)] = true
	}
	for _, f := range files {
		parent := path.Dir(f.path)
		if parent == "." {
			parent = ""
		}
		if f.mode == modeTree {
			ensure(f.path)
			continue
		}
		ensure(parent)
		dirs[parent].entries = append(dirs[parent].entries, rawEntry{f.mode, path.Base(f.path), r.hashObject(typeBlob, []byte(f.data))})
	}
	var write func(p string) string
	write = func(p string) string {
		d := dirs[p]
		entries := append([]rawEntry(nil), d.entries...)
		for name := range d.subdirs {
			entries = append(entries, rawEntry{modeTree, name, write(path.Join(p, name))})
		}
		return r.rawTree(entries)
	}
	return write("")
}

// commitTree commits a tree with git commit-tree at the next tick and
// points main at it.
func (r *testRepo) commitTree(tree, msg string, parents ...string) string {
	r.t.Helper()
	r.tick++
	args := []string{"commit-tree", tree, "-m", msg}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	id := r.git(args...)
	r.git("update-ref", "refs/heads/main", id)
	return id
}

// plumbRepo is a fresh repository whose main is one plumbed commit of
// files plus the test contract.
func plumbRepo(t testing.TB, files ...plumbFile) (*testRepo, string) {
	t.Helper()
	r := newTestRepo(t)
	files = append([]plumbFile{{path: "release.json", mode: 0o100644, data: plainContract}}, files...)
	return r, r.commitTree(r.plumbTree(files), "plumbed")
}

// plainContract is a contract with no module and no changelog: plumbed
// trees need nothing else.
const plainContract = `{"apiVersion": "art/v1alpha1", "kind": "ReleaseContract", "name": "plumb", "license": "MIT"}
`

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
