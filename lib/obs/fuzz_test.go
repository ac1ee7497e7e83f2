package obs

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs/redact"
)

func fuzzSeeds(f *testing.F) []string {
	e := New(Options{})
	env, _ := e.Seal(Draft{Subject: "task/1", Type: "t", Time: time.Unix(1, 0), Role: RoleWorker, Correlation: "c",
		Attrs: map[string]any{"token": "x", "n": 1.5, "l": []any{"a", nil, true}}}, 4)
	return []string{string(env.line), `{"apiVersion":"art/v1alpha1","kind":"Event"}`, `{}`, `[]`}
}

// FuzzParseEnvelope: an accepted envelope is canonical after re-sealing,
// keeps its id, and parses back to the same bytes; a refusal is exit 2.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		env, canonical, err := ParseEnvelope([]byte(in))
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("ParseEnvelope(%q) = %v exit %d; want 2", in, err, exitcode.Of(err))
			}
			return
		}
		if canonical != (string(env.line) == in) {
			t.Fatalf("canonical = %v for %q vs %q", canonical, in, env.line)
		}
		back, canonical, err := ParseEnvelope(env.line)
		if err != nil || !canonical || back.ID() != env.ID() {
			t.Fatalf("re-parse of %s: %v %v", env.line, err, canonical)
		}
	})
}

// FuzzVerify: any file content gives a report, never a panic or an I/O
// error, and a file with findings is never reported ok.
func FuzzVerify(f *testing.F) {
	seeds := fuzzSeeds(f)
	f.Add(seeds[0] + "\n" + seeds[0] + "\n")
	f.Add(seeds[0] + "\n" + seeds[1])
	f.Add("\n\n")
	red := redact.New(redact.Options{})
	f.Fuzz(func(t *testing.T, in string) {
		n := 0
		rep, err := Verify(strings.NewReader(in), "fuzz", red, func(Finding) { n++ })
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if rep.OK != (n == 0) || rep.Findings != n {
			t.Fatalf("report %+v with %d findings", rep, n)
		}
		if rep.Records > strings.Count(in, "\n") {
			t.Fatalf("%d records in %d lines", rep.Records, strings.Count(in, "\n"))
		}
	})
}

// FuzzWrap: any JSON line and template either gives a valid Draft or a
// usage error.
func FuzzWrap(f *testing.F) {
	f.Add(`{"task":"t","type":"enqueued","time":"2024-01-01T00:00:00Z"}`, "task/{task}", "queue.{type}")
	f.Add(`{"a":{"b":1}}`, "{a.b}", "x{{y}}")
	e := New(Options{}, NewMemory())
	defer e.Close()
	f.Fuzz(func(t *testing.T, line, subject, typ string) {
		st, err1 := ParseTemplate(subject)
		tt, err2 := ParseTemplate(typ)
		if err1 != nil || err2 != nil {
			return
		}
		w := Wrap{Subject: st, Type: tt, TimeField: "time"}
		d, err := w.Draft([]byte(line))
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("Draft(%q) = %v exit %d", line, err, exitcode.Of(err))
			}
			return
		}
		if del := e.Emit(context.Background(), d); del.Err != nil {
			t.Fatalf("a wrapped draft failed to emit: %v", del.Err)
		}
		if !bytes.Contains(e.sinks[0].(*Memory).Envelopes()[0].line, []byte(`"kind":"Event"`)) {
			t.Fatal("no envelope")
		}
	})
}
