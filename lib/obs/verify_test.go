package obs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/obs/redact"
)

// sinkFile writes n events of subject s (and one of subject "other") and
// returns the path and its lines.
func sinkFile(t *testing.T, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "e.jsonl")
	e := New(Options{Now: fixedClock()}, openJSONL(t, path, JSONLOptions{}))
	emitN(t, e, "s", n)
	emitN(t, e, "other", 1)
	e.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	return path, lines[:len(lines)-1]
}

func problemsOf(t *testing.T, path string) []string {
	t.Helper()
	var got []string
	if _, err := VerifyFile(path, redact.New(redact.Options{}), func(f Finding) { got = append(got, f.Problem) }); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestVerifyFindings(t *testing.T) {
	tests := []struct {
		name string
		edit func(lines []string) []string
		want []string
	}{
		{"clean", func(l []string) []string { return l }, nil},
		{"tampered value", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"i":1`, `"i":7`, 1)
			return l
		}, []string{ProblemIDMismatch}},
		{"tampered seq", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"seq":2`, `"seq":9`, 1)
			return l
		}, []string{ProblemIDMismatch, ProblemOrder}},
		{"duplicate line", func(l []string) []string { return append(l, l[0]) }, []string{ProblemDuplicate}},
		{"swapped", func(l []string) []string {
			l[0], l[1] = l[1], l[0]
			return l
		}, []string{ProblemOrder}},
		{"removed", func(l []string) []string { return slices.Delete(l, 1, 2) }, []string{ProblemGap}},
		{"torn tail", func(l []string) []string { return append(l, `{"apiVersion":"art/v1alpha1","att`) }, []string{ProblemTorn}},
		{"garbage", func(l []string) []string { return append(l, "hello\n") }, []string{ProblemCorrupt}},
		{"empty line", func(l []string) []string { return append(l, "\n") }, []string{ProblemCorrupt}},
		{"other version", func(l []string) []string {
			return append(l, `{"apiVersion":"art/v2","kind":"Event"}`+"\n")
		}, []string{ProblemVersion}},
		{"not canonical", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"kind":"Event"`, `"kind": "Event"`, 1)
			return l
		}, []string{ProblemNotCanonical}},
		{"too long", func(l []string) []string { return append(l, strings.Repeat("x", MaxDraftBytes+10)+"\n") }, []string{ProblemTooLong}},
	}
	for _, tt := range tests {
		path, lines := sinkFile(t, 3)
		if err := os.WriteFile(path, []byte(strings.Join(tt.edit(lines), "")), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := problemsOf(t, path); !slices.Equal(got, tt.want) {
			t.Errorf("%s: findings %v; want %v", tt.name, got, tt.want)
		}
	}
}

// TestVerifyUnredacted: a record forged with a correct id over raw content
// is caught because redaction would change it.
func TestVerifyUnredacted(t *testing.T) {
	path, lines := sinkFile(t, 1)
	forged := seal(header{subject: "x", typ: "t", time: "2024-01-01T00:00:00Z"}, 1,
		[]byte(`{"note":"key is AKIAIOSFODNN7EXAMPLE"}`), redact.Summary{})
	lines = append(lines, string(forged.AppendLine(nil)))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := problemsOf(t, path); !slices.Equal(got, []string{ProblemUnredacted}) {
		t.Errorf("findings %v; want unredacted", got)
	}
}

func TestVerifyMissingFile(t *testing.T) {
	if _, err := VerifyFile(filepath.Join(t.TempDir(), "none"), nil, nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("VerifyFile(missing) = %v", err)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	e := New(Options{Now: fixedClock()}, openJSONL(t, path, JSONLOptions{}))
	defer e.Close()
	pad := strings.Repeat("p", 300)
	for i := range 400 { // > one 64 KiB chunk
		s := "a"
		if i%2 == 1 {
			s = "b"
		}
		e.Emit(context.Background(), Draft{Subject: s, Type: "t", Attrs: map[string]any{"i": i, "pad": pad}})
	}
	appendFile(t, path, `{"apiVersion":"art/v1alpha1","attr`) // being written
	collect := func(o TailOptions) []uint64 {
		var seqs []uint64
		err := Tail(context.Background(), path, o, func(line []byte) error {
			_, _, seq, ok := peek(line)
			if !ok {
				t.Fatalf("tail printed a partial record: %s", line)
			}
			seqs = append(seqs, seq)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	if got := collect(TailOptions{Lines: 3}); !slices.Equal(got, []uint64{199, 200, 200}) {
		t.Errorf("last 3 = %v; want seqs 199 (a) 200 (b's previous is 199…)", got)
	}
	if got := collect(TailOptions{Lines: 3, Subject: "a"}); !slices.Equal(got, []uint64{198, 199, 200}) {
		t.Errorf("last 3 of a = %v", got)
	}
	if got := collect(TailOptions{Lines: 1000, Subject: "b"}); len(got) != 200 || got[0] != 1 {
		t.Errorf("all of b: %d records starting at %v", len(got), got[:1])
	}
	if got := collect(TailOptions{Lines: 0}); len(got) != 0 {
		t.Errorf("-n 0 printed %v", got)
	}
}

func TestTailFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	e := New(Options{}, openJSONL(t, path, JSONLOptions{}))
	defer e.Close()
	emitN(t, e, "s", 2)
	appendFile(t, path, `{"apiVersion":"art/v1alpha1"`) // a torn record the next writer removes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan uint64, 10)
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, path, TailOptions{Lines: 1, Follow: true, Poll: 5 * time.Millisecond}, func(line []byte) error {
			_, _, seq, ok := peek(line)
			if !ok {
				t.Errorf("followed a partial record: %s", line)
			}
			got <- seq
			return nil
		})
	}()
	want := []uint64{2, 3, 4}
	for i, w := range want {
		if i > 0 {
			emitN(t, e, "s", 1)
		}
		select {
		case s := <-got:
			if s != w {
				t.Errorf("followed seq %d; want %d", s, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("tail -f did not print seq %d", w)
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Tail after cancel = %v", err)
	}
}
