package queue

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
)

// manifestSeeds are manifests of the simple shape and just outside it.
var manifestSeeds = []string{
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"make","args":["-C","src","test"]}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","id":"b1","program":"echo","args":[],"dir":"sub","context":["a.txt"]}`,
	` { "kind" : "Task" , "apiVersion" : "art/v1alpha1" , "program" : "true" } `,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"echo","args":["a \"b\""]}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"echo","args":["ünï"]}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"echo","limits":{"timeout":"5s"}}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"echo","env":{"allow":[]}}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"echo","program":"true"}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","Program":"echo"}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":""}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","id":"a.b","program":"x"}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"x","args":null}`,
	`{"apiVersion":"art/v1alpha2","kind":"Task","program":"x"}`,
	`{"apiVersion":"art/v1alpha1","kind":"Policy","program":"x"}`,
	`{"kind":"Task","program":"x"}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"x"} {}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"x",}`,
	`{"apiVersion":"art/v1alpha1","kind":"Task","program":"x","args":["a",]}`,
	`{}`,
	`[]`,
	``,
}

// FuzzManifestFast holds the fast path to the strict decoder and the
// general encoder: whatever it accepts, DecodeManifest accepts as the
// same Task, and whatever it encodes, canonical encodes to the same bytes.
func FuzzManifestFast(f *testing.F) {
	for _, s := range manifestSeeds {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "gen-id")
	}
	f.Fuzz(func(t *testing.T, data []byte, id string) {
		var fast execx.Task
		fast.Args = []string{"left", "over"} // reuse must not leak
		if decodeSimple(data, &fast) {
			slow, err := DecodeManifest(data)
			if err != nil {
				t.Fatalf("fast path accepted %q; DecodeManifest: %v", data, err)
			}
			if !reflect.DeepEqual(&fast, slow) {
				t.Fatalf("%q: fast %#v, strict %#v", data, &fast, slow)
			}
		}
		slow, err := DecodeManifest(data)
		if err != nil {
			return
		}
		if id == "" || ValidName("id", id) != nil {
			id = slow.ID
		}
		want := *slow
		want.ID = id
		wantBytes, err := canonical(&want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendCanonical([]byte("prefix"), slow, id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[len("prefix"):], wantBytes) {
			t.Fatalf("%q: appendCanonical\n%s\nwant\n%s", data, got[len("prefix"):], wantBytes)
		}
	})
}

func TestManifestFastShape(t *testing.T) {
	for i, s := range manifestSeeds {
		var tk execx.Task
		got := decodeSimple([]byte(s), &tk)
		want := i < 3 // the first three are the simple shape; the rest fall back
		if got != want {
			t.Errorf("decodeSimple(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestReadBatch(t *testing.T) {
	const ok = `{"apiVersion":"art/v1alpha1","kind":"Task","program":"echo"}`
	for _, tc := range []struct {
		name, in string
		code     int
		err      string // substring of the error
		n        int
	}{
		{"blank lines skipped", ok + "\n\n  \r\n" + ok + "\r\n" + ok, 0, "", 3},
		{"no final newline", ok, 0, "", 1},
		{"empty", "\n \n", exitcode.Usage, "batch: no Task manifests in the input", 0},
		{"bad line named", ok + "\n\n" + `{"apiVersion":"art/v1alpha1","kind":"Task"}`, exitcode.Usage, "line 3: task.program: required", 0},
		{"unknown field", ok + "\n" + `{"apiVersion":"art/v1alpha1","kind":"Task","program":"x","timout":"1s"}`, exitcode.Usage, "line 2: task.timout: unknown field", 0},
		{"not JSON", "nope\n", exitcode.Usage, "line 1: task", 0},
		{"too long", ok + "\n" + `{"apiVersion":"art/v1alpha1","kind":"Task","program":"` + strings.Repeat("x", MaxManifestBytes) + `"}`, exitcode.Usage, "line 2: task: manifest is more than 1048576 bytes", 0},
		{"twice differently", `{"apiVersion":"art/v1alpha1","kind":"Task","id":"a","program":"x"}` + "\n" + `{"apiVersion":"art/v1alpha1","kind":"Task","id":"a","program":"y"}`, exitcode.Conflict, "line 2: task a: given twice with different manifests", 0},
		{"twice the same", `{"apiVersion":"art/v1alpha1","kind":"Task","id":"a","program":"x"}` + "\n" + `{"apiVersion":"art/v1alpha1","kind":"Task","id":"a","program":"x"}`, 0, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tc.in)
			if len(tc.in) < 4096 {
				r = iotest.OneByteReader(r) // lines across reads
			}
			b, err := ReadBatch(r, BatchOptions{MaxAttempts: 1})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || exitcode.Of(err) != tc.code {
					t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, exitcode.Of(err), tc.err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Len() != tc.n {
				t.Fatalf("Len = %d, want %d", b.Len(), tc.n)
			}
		})
	}
}

func TestReadBatchOptions(t *testing.T) {
	in := `{"apiVersion":"art/v1alpha1","kind":"Task","id":"own","program":"echo"}` + "\n\n" +
		`{"apiVersion":"art/v1alpha1","kind":"Task","program":"echo","args":["two"]}` + "\n" +
		`{"apiVersion":"art/v1alpha1","kind":"Task","program":"bin/x"}` + "\n"
	var lines []int
	refuse := errors.New("refused")
	_, err := ReadBatch(strings.NewReader(in), BatchOptions{MaxAttempts: 2, Check: func(line int, t *execx.Task) error {
		lines = append(lines, line)
		if strings.Contains(t.Program, "/") {
			return refuse
		}
		return nil
	}})
	if err != refuse || !reflect.DeepEqual(lines, []int{1, 3, 4}) {
		t.Fatalf("err %v, Check saw lines %v; want the Check's own error after lines 1, 3, 4", err, lines)
	}

	spec := &RunSpec{Workspace: WorkspaceCopy}
	b, err := ReadBatch(strings.NewReader(in), BatchOptions{MaxAttempts: 2, IdempotencyKey: "k1", Run: spec})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range b.Len() {
		ev := b.event(i)
		ids = append(ids, ev.Task)
		if ev.MaxAttempts != 2 || string(ev.Run) != `{"workspace":"copy"}` {
			t.Errorf("request %d: max %d run %s", i, ev.MaxAttempts, ev.Run)
		}
	}
	reqs := []EnqueueRequest{{Task: &execx.Task{ID: "own"}}, {Task: &execx.Task{}}, {Task: &execx.Task{}}}
	if err := IdempotentIDs("k1", reqs); err != nil {
		t.Fatal(err)
	}
	if want := []string{"own", reqs[1].ID, reqs[2].ID}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids %v, want %v (as IdempotentIDs names them: position among the manifests)", ids, want)
	}
	if !b.isGiven(1) || !b.isGiven(2) {
		t.Fatal("ids from the key count as chosen: a re-run must check them against the queue")
	}
}

// fakeBackend records appends; it is only what EnqueueBatch needs.
type fakeBackend struct {
	Backend
	appends [][]Proposal
}

func (f *fakeBackend) Append(_ context.Context, ps []Proposal) ([]*Event, error) {
	f.appends = append(f.appends, ps)
	out := make([]*Event, len(ps))
	for i, p := range ps {
		ev := *p.Event
		ev.Seq = uint64(i + 1)
		out[i] = &ev
	}
	return out, nil
}

func TestEnqueueBatchGeneratedIDsOneAppend(t *testing.T) {
	var in strings.Builder
	for range batchChunk + 10 { // more than one chunk of events
		in.WriteString(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"make","args":["test"]}` + "\n")
	}
	b, err := ReadBatch(strings.NewReader(in.String()), BatchOptions{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{}
	res, err := New(fb).EnqueueBatch(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.appends) != 1 || len(fb.appends[0]) != b.Len() || res.Created != b.Len() || res.FirstSeq != 1 || res.LastSeq != uint64(b.Len()) {
		t.Fatalf("%d appends, result %+v", len(fb.appends), res)
	}
	seen := map[string]bool{}
	n := 0
	res.Each(func(e Enqueued) error {
		p := fb.appends[0][n].Event
		if !e.Created || e.Status.ID != p.Task || seen[p.Task] || !fb.appends[0][n].Any || e.Status.Program != "make" {
			t.Fatalf("request %d: %+v for %+v", n, e, p)
		}
		if !bytes.Contains(p.Manifest, []byte(`"id":"`+p.Task+`"`)) {
			t.Fatalf("manifest %s does not carry id %s", p.Manifest, p.Task)
		}
		seen[p.Task] = true
		n++
		return nil
	})
	if n != b.Len() {
		t.Fatalf("Each gave %d of %d", n, b.Len())
	}
	if err := b.Add(EnqueueRequest{Task: &execx.Task{Program: "x"}, MaxAttempts: 1}); err == nil {
		t.Fatal("Add to an enqueued batch succeeded")
	}
	if _, err := New(fb).EnqueueBatch(context.Background(), b); err == nil || len(fb.appends) != 1 {
		t.Fatalf("a second EnqueueBatch of the same batch: %v, %d appends", err, len(fb.appends))
	}
}
