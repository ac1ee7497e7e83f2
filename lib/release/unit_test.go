package release

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

func resolveForTest(r *testRepo, ref string) (*Identity, error) {
	repo, err := OpenRepo(context.Background(), r.dir)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	return repo.Resolve(context.Background(), ref, "v")
}

func TestResolveVersions(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.commit("one")
	r.git("tag", "v0.9.0")
	c2 := r.commit("two")
	r.git("tag", "-a", "-m", "rc", "v1.0.0-rc.1")
	c3 := r.commit("three")
	r.git("tag", "-a", "-m", "release", "v1.0.0")
	r.git("tag", "not-a-version")
	r.git("tag", "v1.1") // shorthand: not canonical, never a release tag
	c4 := r.commit("four")
	r.git("checkout", "-q", "-b", "other", c1)
	c5 := r.commit("five")
	r.git("tag", "v5.0.0")
	r.git("checkout", "-q", "main")

	pseudo := func(base string, tick int, commit string) string {
		return base + time.Unix(baseTime+60*int64(tick), 0).UTC().Format("20060102150405") + "-" + commit[:12]
	}
	for _, tc := range []struct {
		ref                     string
		version, tag, previous  string
		wantPrevID, wantErrCode int
	}{
		{ref: "v1.0.0", version: "1.0.0", tag: "v1.0.0", previous: "v0.9.0"},
		{ref: "HEAD~1", version: "1.0.0", tag: "v1.0.0", previous: "v0.9.0"},
		{ref: "refs/tags/v1.0.0", version: "1.0.0", tag: "v1.0.0", previous: "v0.9.0"},
		{ref: "tags/v1.1", wantErrCode: exitcode.Usage},
		{ref: "HEAD\nv1.0.0", wantErrCode: exitcode.Usage},
		{ref: "v1.0.0-rc.1", version: "1.0.0-rc.1", tag: "v1.0.0-rc.1", previous: "v0.9.0"},
		{ref: c2, version: "1.0.0-rc.1", tag: "v1.0.0-rc.1", previous: "v0.9.0"},
		{ref: "HEAD", version: pseudo("1.0.1-0.", 4, c4), previous: "v1.0.0"},
		{ref: "v0.9.0", version: "0.9.0", tag: "v0.9.0"},
		// v1.0.0, the highest earlier release, is not in v5.0.0's history:
		// the nearest release tag of its own ancestry is.
		{ref: "v5.0.0", version: "5.0.0", tag: "v5.0.0", previous: "v0.9.0"},
		{ref: "not-a-version", wantErrCode: exitcode.Usage},
		{ref: "nope", wantErrCode: exitcode.NotFound},
	} {
		id, err := resolveForTest(r, tc.ref)
		if tc.wantErrCode != 0 {
			if exitcode.Of(err) != tc.wantErrCode {
				t.Errorf("Resolve(%s) = %v, want exit %d", tc.ref, err, tc.wantErrCode)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%s): %v", tc.ref, err)
			continue
		}
		if id.Version != tc.version || id.Tag != tc.tag || id.Previous != tc.previous {
			t.Errorf("Resolve(%s) = version %q tag %q previous %q; want %q %q %q", tc.ref, id.Version, id.Tag, id.Previous, tc.version, tc.tag, tc.previous)
		}
	}
	_ = c3
	_ = c5
	// No tag at all: Go's v0.0.0 pseudo-version.
	r2 := newTestRepo(t)
	c := r2.commit("only")
	id, err := resolveForTest(r2, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if want := pseudo("0.0.0-", 1, c); id.Version != want || id.GoVersion != "v"+want {
		t.Errorf("untagged version %s, want %s", id.Version, want)
	}
}

func TestParseChange(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want Change
	}{
		{"feat: add x", Change{Type: "feat", Summary: "add x"}},
		{"Feat(api)!: drop y\n\nbody", Change{Type: "feat", Scope: "api", Breaking: true, Summary: "drop y"}},
		{"fix(a b): z\n\nBREAKING CHANGE: w", Change{Type: "fix", Scope: "a b", Breaking: true, Summary: "z"}},
		{"fix: z\n\nBREAKING-CHANGE: w", Change{Type: "fix", Breaking: true, Summary: "z"}},
		{"words: gofmt", Change{Type: "words", Summary: "gofmt"}},
		{"Initial import", Change{Summary: "Initial import"}},
		{"\n\nwrapped\nsubject line\n\nbody", Change{Summary: "wrapped subject line"}},
		{"feat:no space", Change{Summary: "feat:no space"}},
		{"Merge branch 'x'\n\nBREAKING CHANGE: not conventional", Change{Summary: "Merge branch 'x'"}},
		{"docs: crlf\r\n\r\nbody", Change{Type: "docs", Summary: "crlf"}},
	} {
		if got := ParseChange(tc.msg); got != tc.want {
			t.Errorf("ParseChange(%q) = %+v; want %+v", tc.msg, got, tc.want)
		}
	}
}

func TestNotes(t *testing.T) {
	c, err := DecodeContract([]byte(testContract))
	if err != nil {
		t.Fatal(err)
	}
	id := &Identity{
		Commit:  &Commit{ID: strings.Repeat("c", 40), CommitterTime: baseTime},
		Tag:     "v1.1.0",
		Version: "1.1.0", Previous: "v1.0.0",
	}
	commits := []NoteCommit{
		{strings.Repeat("1", 40), "fix(parser): handle x"},
		{strings.Repeat("2", 40), "feat!: new format"},
		{strings.Repeat("3", 40), "feat(cli): flag"},
		{strings.Repeat("4", 40), "Update README"},
		{strings.Repeat("5", 40), "wip: something"},
	}
	got := string(buildNotes(notesInput{Contract: c, ID: id, Commits: commits}))
	want := "# fixture 1.1.0\n\n" +
		"Built from commit `cccccccccccccccccccccccccccccccccccccccc` (tag `v1.1.0`), committed 2026-01-02 15:04:05 UTC.\n\n" +
		"5 changes since v1.0.0.\n" +
		"Changes to documents and the command line are listed in [CHANGELOG.md](CHANGELOG.md).\n" +
		"\n## Breaking changes\n\n- new format (222222222222)\n" +
		"\n## Features\n\n- **cli:** flag (333333333333)\n" +
		"\n## Bug fixes\n\n- **parser:** handle x (111111111111)\n" +
		"\n## Other changes\n\n- Update README (444444444444)\n- wip: something (555555555555)\n"
	if got != want {
		t.Errorf("notes:\n%s\nwant:\n%s", got, want)
	}
	c.Notes.Group = GroupNone
	c.Notes.Changelog = ""
	got = string(buildNotes(notesInput{Contract: c, ID: id, Commits: commits[:2]}))
	if !strings.HasSuffix(got, "\n## Changes\n\n- fix: **parser:** handle x (111111111111)\n- feat: new format (222222222222)\n") &&
		!strings.HasSuffix(got, "\n## Changes\n\n- **parser:** fix: handle x (111111111111)\n- feat: new format (222222222222)\n") {
		t.Errorf("ungrouped notes:\n%s", got)
	}
	if strings.Contains(got, "CHANGELOG") {
		t.Error("notes link a changelog the contract does not name")
	}
}

func TestDecodeContract(t *testing.T) {
	ok := `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"Apache-2.0"}`
	c, err := DecodeContract([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Artifacts, ",") != "archive,sbom,notes" || c.Version.Prefix() != "v" || c.Notes.Group != GroupConventional || c.Submodules != SubmodulesRefuse {
		t.Errorf("defaults %+v", c)
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"Apache-2.0","nmae":"x"}`, "contract.nmae: unknown field"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"Art","license":"Apache-2.0"}`, "contract.name"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"Apache 2"}`, "contract.license"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT AND"}`, "contract.license"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art"}`, "contract.license: required"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","artifacts":["sbom"]}`, "contract.artifacts: must include"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","artifacts":["archive","archive"]}`, "contract.artifacts[1]: duplicate"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","artifacts":["archive","provenance"]}`, "contract.artifacts[1]: unknown artifact"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","module":"Not A Path"}`, "contract.module"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","notes":{"changelog":"../x"}}`, "contract.notes.changelog"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","notes":{"group":"fancy"}}`, "contract.notes.group"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","submodules":"fetch"}`, "contract.submodules"},
		{`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","version":{"tag_prefix":"a b"}}`, "contract.version.tag_prefix"},
		{`{"apiVersion":"art/v1alpha1","kind":"Task","name":"art","license":"MIT"}`, "contract.kind"},
		{ok + ` {}`, "trailing data"},
	} {
		_, err := DecodeContract([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("DecodeContract(%s) = %v; want exit 2 mentioning %q", tc.doc, err, tc.want)
		}
	}
}

func TestPurl(t *testing.T) {
	for _, tc := range []struct{ path, version, want string }{
		{"github.com/Azure/azure-sdk-for-go", "v68.0.0+incompatible", "pkg:golang/github.com/Azure/azure-sdk-for-go@v68.0.0%2Bincompatible"},
		{"github.com/nats-io/nats-server/v2", "v2.15.2", "pkg:golang/github.com/nats-io/nats-server/v2@v2.15.2"},
		{"gopkg.in/yaml.v3", "v3.0.1", "pkg:golang/gopkg.in/yaml.v3@v3.0.1"},
		{"example.com/a~b_c", "", "pkg:golang/example.com/a~b_c"},
	} {
		if got := Purl(tc.path, tc.version); got != tc.want {
			t.Errorf("Purl(%s, %s) = %s; want %s", tc.path, tc.version, got, tc.want)
		}
	}
}

func TestUUIDv5(t *testing.T) {
	// RFC 9562 Appendix A.4: UUIDv5 of "www.example.com" in the DNS namespace.
	dns := [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	if got, want := uuidV5(dns, "www.example.com"), "2ed6657d-e927-568b-95e1-2665a8aea6a2"; got != want {
		t.Errorf("uuidV5 = %s; want %s", got, want)
	}
}

func TestSums(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	data := FormatSums([]Sum{{b, "z.tar.gz"}, {a, "NOTES.md"}})
	if string(data) != a+"  NOTES.md\n"+b+"  z.tar.gz\n" {
		t.Errorf("FormatSums = %q", data)
	}
	if sums, err := ParseSums(data); err != nil || len(sums) != 2 {
		t.Errorf("ParseSums(FormatSums) = %v, %v", sums, err)
	}
	for _, bad := range []string{
		"", a + "  x", a + " x\n", strings.ToUpper(a) + "  x\n", a + "  b\n" + a + "  a\n",
		a + "  a\n" + a + "  a\n", a + "  ../x\n", a + "  x\r\n", a + " *x\n",
	} {
		if _, err := ParseSums([]byte(bad)); err == nil {
			t.Errorf("ParseSums(%q) accepted", bad)
		}
	}
}

func TestParseGoModErrors(t *testing.T) {
	for _, tc := range []struct{ mod, sum, want string }{
		{"modul x\n", "", "go.mod"},
		{"go 1.22\n", "", "no module directive"},
		{"module x\nrequire a.com/b v1.0.0\n", "a.com/b v1.0.0\n", "go.sum:1"},
		{"module x\nrequire a.com/b v1.0.0\n", "a.com/b v1.0.0 h1:notbase64!\n", "go.sum:1"},
		{"module x\nrequire a.com/b v1.0.0\n", "a.com/b vX h1:AczMIuUHxSR0hRDEKtoZDl7N2l0fz05lcIkCIEvW/sA=\n", "go.sum:1"},
	} {
		_, err := ParseGoMod([]byte(tc.mod), []byte(tc.sum))
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("ParseGoMod(%q, %q) = %v; want exit 2 with %q", tc.mod, tc.sum, err, tc.want)
		}
	}
}

func TestParseLsTreeAndCommit(t *testing.T) {
	oid := strings.Repeat("a", 40)
	out := "100644 blob " + oid + "\tx y\x00040000 tree " + oid + "\td\x00"
	es, err := parseLsTree([]byte(out))
	if err != nil || len(es) != 2 || es[0].Path != "x y" || es[1].Mode != modeTree {
		t.Fatalf("parseLsTree = %+v, %v", es, err)
	}
	for _, bad := range []string{"100644 blob " + oid + "\tx", "100644 blob\tx\x00", "10064z blob " + oid + "\tx\x00", "100644 blob " + oid + "\t../x\x00"} {
		if _, err := parseLsTree([]byte(bad)); err == nil {
			t.Errorf("parseLsTree(%q) accepted", bad)
		}
	}
	c, err := parseCommit(oid, []byte("tree "+oid+"\nparent "+oid+"\nauthor A <a> 1 +0000\ncommitter C <c@x> 1700000000 +0530\n\nmsg\n"))
	if err != nil || c.CommitterTime != 1700000000 || c.Message != "msg\n" || len(c.Parents) != 1 {
		t.Errorf("parseCommit = %+v, %v", c, err)
	}
}

func TestOrderCommits(t *testing.T) {
	c := func(id string, time int64, parents ...string) *Commit {
		return &Commit{ID: id, CommitterTime: time, Parents: parents, Message: id}
	}
	ids := func(ns []NoteCommit) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.ID)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name    string
		commits []*Commit
		want    string
	}{
		{"merge: branches by time, merge not listed",
			[]*Commit{c("a", 1, "x"), c("b", 2, "a"), c("c", 3, "a"), c("d", 5, "b", "c"), c("e", 6, "d")},
			"e c b a"},
		{"a child before its parent even when older (rebased)",
			[]*Commit{c("p", 50), c("q", 10, "p")},
			"q p"},
		{"equal times: lower id first",
			[]*Commit{c("r", 1), c("m2", 9, "r"), c("m1", 9, "r"), c("top", 10, "m1", "m2")},
			"m1 m2 r"},
	} {
		// Input order must not matter.
		for _, in := range [][]*Commit{tc.commits, reversed(tc.commits)} {
			if got := ids(orderCommits(in)); got != tc.want {
				t.Errorf("%s: orderCommits = %q; want %q", tc.name, got, tc.want)
			}
		}
	}
}

func reversed(cs []*Commit) []*Commit {
	out := make([]*Commit, len(cs))
	for i, c := range cs {
		out[len(cs)-1-i] = c
	}
	return out
}

func TestManifestValidate(t *testing.T) {
	a := strings.Repeat("a", 64)
	good := func() *Manifest {
		return &Manifest{
			TypeMeta: jsonx.Meta(KindManifest), Name: "x", Version: "1.0.0",
			Commit: a[:40], Tree: a[:40], CommitTime: "2026-01-02T15:04:05Z",
			Contract:  ContractRef{APIVersion: jsonx.APIVersion, SHA256: a},
			Artifacts: []Artifact{{Name: "x-1.0.0.tar.gz", Kind: ArtifactArchive, Size: 1, SHA256: a, TarSize: 2, TarSHA256: a}},
		}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field  string
		damage func(m *Manifest)
	}{
		{"manifest.name", func(m *Manifest) { m.Name = "X Y" }},
		{"manifest.version", func(m *Manifest) { m.Version = "v1.0.0" }},
		{"manifest.commit", func(m *Manifest) { m.Commit = "abc" }},
		{"manifest.tree", func(m *Manifest) { m.Tree = strings.Repeat("A", 40) }},
		{"manifest.commit_time", func(m *Manifest) { m.CommitTime = "2026-01-02T15:04:05+01:00" }},
		{"manifest.contract.sha256", func(m *Manifest) { m.Contract.SHA256 = "" }},
		{"manifest.artifacts", func(m *Manifest) { m.Artifacts = nil }},
		{"manifest.artifacts[1].name", func(m *Manifest) { m.Artifacts = append(m.Artifacts, m.Artifacts[0]) }},
		{"manifest.artifacts[0].name", func(m *Manifest) { m.Artifacts[0].Name = "../x" }},
		{"manifest.artifacts[0].name", func(m *Manifest) { m.Artifacts[0].Name = SumsName }},
		{"manifest.artifacts[0].kind", func(m *Manifest) { m.Artifacts[0].Kind = "binary" }},
		{"manifest.artifacts[0].size", func(m *Manifest) { m.Artifacts[0].Size = -1 }},
		{"manifest.artifacts[0].sha256", func(m *Manifest) { m.Artifacts[0].SHA256 = a[:63] }},
		{"manifest.artifacts[0].tar_sha256", func(m *Manifest) { m.Artifacts[0].TarSHA256 = "" }},
		{"manifest.artifacts[0].tar_sha256", func(m *Manifest) { m.Artifacts[0].TarSHA256 = "zz" }},
		{"manifest.artifacts[0].tar_sha256", func(m *Manifest) { m.Artifacts[0].Kind = ArtifactNotes }},
	} {
		m := good()
		tc.damage(m)
		err := m.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: Validate = %v; want an error on %s", tc.field, err, tc.field)
		}
	}
}

func TestStreamErrors(t *testing.T) {
	r := newTestRepo(t)
	c := r.commit("one")
	repo, err := OpenRepo(context.Background(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	if err := repo.Stream([]string{"HEAD"}, nil); err == nil {
		t.Error("Stream accepted a revision expression where an object id is required")
	}
	obj, err := repo.ReadObject(c)
	if err != nil || obj.Type != typeCommit {
		t.Fatalf("ReadObject = %v, %v", obj.Type, err)
	}
	// A callback error abandons the stream: the reader is dead, every
	// later read fails rather than returning another request's bytes.
	boom := errors.New("boom")
	err = repo.Stream([]string{c, c, c}, func(i int, _ string, _ int64, _ io.Reader) error {
		if i == 1 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Stream = %v, want the callback's error", err)
	}
	if _, err := repo.ReadObject(c); err == nil || !strings.Contains(err.Error(), "abandoned") {
		t.Errorf("read after an abandoned stream = %v, want refused", err)
	}
	// A missing object is not found.
	repo2, err := OpenRepo(context.Background(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer repo2.Close()
	if _, err := repo2.ReadObject(strings.Repeat("0", 40)); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing object: %v", err)
	}
}

// TestEmptyTagPrefix: "tag_prefix": "" is honoured (tags such as 7.8.1),
// not replaced by the default "v".
func TestEmptyTagPrefix(t *testing.T) {
	c, err := DecodeContract([]byte(`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","version":{"tag_prefix":""}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Version.Prefix() != "" {
		t.Fatalf("prefix %q, want empty", c.Version.Prefix())
	}
	r := newTestRepo(t)
	r.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"art","license":"MIT","version":{"tag_prefix":""}}`, 0o644)
	r.commit("one")
	r.git("tag", "-a", "-m", "7.8.0", "7.8.0")
	r.commit("two")
	r.git("tag", "-a", "-m", "7.8.1", "7.8.1")
	r.git("tag", "-a", "-m", "v9.0.0", "v9.0.0") // not a release tag under this contract
	_, m := build(t, r.dir, "7.8.1", false)
	if m.Version != "7.8.1" || m.Tag != "7.8.1" || m.PreviousTag != "7.8.0" {
		t.Errorf("version %s tag %s previous %s; want 7.8.1, 7.8.1, 7.8.0", m.Version, m.Tag, m.PreviousTag)
	}
	_, m = build(t, r.dir, "HEAD", false)
	if m.Version != "7.8.1" {
		t.Errorf("HEAD version %s, want 7.8.1", m.Version)
	}
	out := t.TempDir() + "/x"
	if _, err := Build(context.Background(), BuildOptions{Repo: r.dir, Ref: "v9.0.0", Out: out}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("build --ref v9.0.0 under prefix \"\": %v, want exit 2", err)
	}
}

// TestNotesPreviousLineNotInHistory: a release cut from main after the
// previous line was released on its own branch (v1.2.0 on release-1.2,
// v1.1.1 on release-1.1) starts its notes at the nearest release tag in its
// own ancestry, v1.0.0: a backport tagged later on release-1.1 cannot change
// them. Subjects are escaped for Markdown and an empty subject is named.
func TestNotesPreviousLineNotInHistory(t *testing.T) {
	r := newTestRepo(t)
	r.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"line","license":"MIT"}`, 0o644)
	r.commit("feat: one")
	r.git("tag", "-a", "-m", "v1.0.0", "v1.0.0")
	b := r.commit("feat: two")
	r.commit("fix: <script>alert(1)</script> in _git_ *paths* [x](http://e) `code` &amp;")
	d := r.commit("feat: four")
	r.git("checkout", "-q", "-b", "release-1.1", b)
	r.commit("fix: backport")
	r.git("tag", "-a", "-m", "v1.1.0", "v1.1.0")
	r.commit("fix: backport two")
	r.git("tag", "-a", "-m", "v1.1.1", "v1.1.1")
	r.git("checkout", "-q", "-b", "release-1.2", d)
	r.tick++
	r.git("commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
	r.git("tag", "-a", "-m", "v1.2.0", "v1.2.0")

	out, m := build(t, r.dir, "v1.2.0", false)
	if m.PreviousTag != "v1.0.0" {
		t.Errorf("previous tag %s, want v1.0.0", m.PreviousTag)
	}
	notes, _ := os.ReadFile(out + "/" + NotesName)
	text := string(notes)
	for _, want := range []string{
		"4 changes since v1.0.0.",
		`- \<script\>alert(1)\</script\> in \_git\_ \*paths\* \[x\](http://e) \` + "`" + `code\` + "`" + ` \&amp; (`,
		"- (no subject) (",
		"- four (",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("notes lack %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"backport", "<script>", "merge base"} {
		if strings.Contains(text, bad) {
			t.Errorf("notes hold %q:\n%s", bad, text)
		}
	}
}

// TestVerifyRepoNotesFromManifest: verify --repo rebuilds the notes from
// the manifest's previous tag, so a tag made after the release (a later
// backport of the previous line) does not make a good release fail.
func TestVerifyRepoNotesFromManifest(t *testing.T) {
	r := newTestRepo(t)
	r.write("release.json", `{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"line","license":"MIT"}`, 0o644)
	r.commit("feat: one")
	r.git("tag", "-a", "-m", "v1.0.0", "v1.0.0")
	b := r.commit("feat: two")
	r.commit("feat: three")
	r.git("tag", "-a", "-m", "v1.1.0", "v1.1.0")
	out, m := build(t, r.dir, "v1.1.0", false)
	if m.PreviousTag != "v1.0.0" {
		t.Fatalf("previous %s", m.PreviousTag)
	}
	// Later, v1.0.1 is tagged on a maintenance branch.
	r.git("checkout", "-q", "-b", "release-1.0", b)
	r.commit("fix: backport")
	r.git("tag", "-a", "-m", "v1.0.1", "v1.0.1")
	if _, m2 := build(t, r.dir, "v1.1.0", false); m2.PreviousTag != "v1.0.0" {
		t.Fatalf("a fresh build's previous tag %s, want v1.0.0 (v1.0.1 is not in its ancestry)", m2.PreviousTag)
	}
	if rep, err := Verify(context.Background(), VerifyOptions{Dir: out, Repo: r.dir}); err != nil || !rep.Rebuilt {
		t.Errorf("verify --repo after a later tag: %v %+v", err, rep)
	}
}
