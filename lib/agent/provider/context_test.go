package provider

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func history(n, obsBytes int) []Turn {
	var h []Turn
	for i := 1; i <= n; i++ {
		exit := i % 3
		switch i % 4 {
		case 0:
			h = append(h, NewTurn(i, "", []byte(`{"action":"run_tool","program":"go","args":["test","./..."]}`), "observation", "", &exit, strings.Repeat(fmt.Sprintf("line %d of output\n", i), obsBytes/18)))
		case 1:
			h = append(h, NewTurn(i, "", []byte(`{"action":"read_file","path":"a.go"}`), "observation", "", nil, strings.Repeat("x", obsBytes)))
		case 2:
			h = append(h, NewTurn(i, `{"action":"replace_text","path":"a.go","old":"`+strings.Repeat("y", 16000), nil, "truncated", "", nil, "reply cut off"))
		case 3:
			h = append(h, NewTurn(i, "", []byte(`{"action":"replace_text","path":"a.go","old":"a","new":"b"}`), "rejected", "match", nil, "old text not found"))
		}
	}
	return h
}

// A malformed (here cut-off) reply of 16,000 characters is kept in the
// history only head-and-tail; a decoded one in canonical form.
func TestNewTurnBoundsReplies(t *testing.T) {
	h := history(3, 10)
	if len(h[1].Reply) > MaxTurnReplyBytes || !strings.Contains(h[1].Reply, "bytes elided") {
		t.Fatalf("malformed reply kept as %d bytes", len(h[1].Reply))
	}
	tr := NewTurn(1, `{ "action" : "verify" ,   "reason":"x"}`+"\n", []byte(`{"action":"verify","reason":"x"}`), "verify", "", nil, "ok")
	if tr.Reply != `{"action":"verify","reason":"x"}` {
		t.Fatalf("reply %q; want the canonical decision", tr.Reply)
	}
}

// Fit keeps every conversation within the budget, whatever the history,
// and is a pure function of its input.
func TestFitWithinBudget(t *testing.T) {
	for _, n := range []int{1, 2, 5, 30, 200} {
		for _, obs := range []int{10, 2000, 16384} {
			for _, budget := range []int{600, 1500, 4096, 32768} {
				h := history(n, obs)
				c := Fit(h, budget)
				if c.Tokens > budget {
					t.Errorf("n=%d obs=%d budget=%d: %d tokens", n, obs, budget, c.Tokens)
				}
				if len(c.Turns) == 0 || c.Turns[len(c.Turns)-1].Step != n {
					t.Errorf("n=%d obs=%d budget=%d: the latest step is not shown", n, obs, budget)
				}
				if shown := len(c.Turns); shown < n && !strings.Contains(c.Summary, fmt.Sprintf("(%d steps;", n-shown)) {
					t.Errorf("n=%d budget=%d: %d shown, summary %q", n, budget, shown, c.Summary)
				}
				if again := Fit(history(n, obs), budget); !reflect.DeepEqual(c, again) {
					t.Errorf("n=%d obs=%d budget=%d: not deterministic", n, obs, budget)
				}
			}
		}
	}
}

func TestFitStages(t *testing.T) {
	h := history(8, 3000)
	if c := Fit(h, 0); len(c.Turns) != 8 || c.Summary != "" || c.Turns[0].Observation != h[0].Observation {
		t.Fatal("an unbounded fit changed the history")
	}
	// Older observations are cut before any step is collapsed.
	c := Fit(h, 4000)
	if c.Summary != "" || !strings.Contains(c.Turns[0].Observation, "bytes elided") || c.Turns[7].Observation != h[7].Observation {
		t.Fatalf("stage 2: summary %q, first observation %d bytes", c.Summary, len(c.Turns[0].Observation))
	}
	// Then the oldest steps collapse into one line each.
	c = Fit(h, 1500)
	if c.Summary == "" || len(c.Turns) == 8 {
		t.Fatalf("stage 3: nothing collapsed (%d tokens)", c.Tokens)
	}
	for _, want := range []string{
		"- step 1: read_file a.go → observation",
		"- step 2: malformed reply → truncated",
		"- step 3: replace_text a.go → rejected (match)",
	} {
		if !strings.Contains(c.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, c.Summary)
		}
	}
	if c.Turns[0].Step == 1 {
		t.Error("step 1 both summarised and shown")
	}
}

func TestNormalizeMasksVolatileText(t *testing.T) {
	a := Normalize("ok  \tcalc\t0.123s\n--- PASS: TestX (0.01s)\n2026-12-01T09:53:00.123Z took 1m2.5s, 15ms")
	b := Normalize("ok  \tcalc\t(cached)\n--- PASS: TestX (1.20s)\n2026-12-02T10:00:00Z took 3m0s, 7ms")
	if a != b {
		t.Fatalf("%q != %q", a, b)
	}
	if Normalize("a.go (3 bytes):\nabc") != "a.go (3 bytes):\nabc" {
		t.Fatal("masked text that is not volatile")
	}
	r1, r2 := NewRequest(), NewRequest()
	r1.History = []Turn{{Step: 1, Reply: "{}", Observation: "ok pkg 0.5s"}}
	r2.History = []Turn{{Step: 1, Reply: "{}", Observation: "ok pkg 0.7s"}}
	if r1.Hash() != r2.Hash() || r1.History[0].Observation != "ok pkg 0.5s" {
		t.Fatal("request hashes differ only by a duration, or Hash changed the request")
	}
	r2.History[0].Observation = "FAIL pkg 0.7s"
	if r1.Hash() == r2.Hash() {
		t.Fatal("hash ignores a real difference")
	}
}

func TestNormalizeCases(t *testing.T) {
	for in, want := range map[string]string{
		"ok  \tcalc\t0.123s":                 "ok  \tcalc\t<t>",
		"took 1m2.5s and 15ms, 3µs, 2h3m4s":  "took <t> and <t>, <t>, <t>",
		"at 2026-12-01T09:53:00.123+01:00 x": "at <t> x",
		"log 2026/12/01 09:53:00 started":    "log <t> started",
		"ok calc (cached)":                   "ok calc <t>",
		"5 files, line 12, v1.2s, 10sec":     "5 files, line 12, v1.2s, 10sec",
		"a.go:12:3: x2s 5m":                  "a.go:12:3: x2s 5m",
		"":                                   "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q; want %q", in, got, want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("ok pkg 0.1s 2026-12-01T09:53:00Z (cached)")
	f.Fuzz(func(t *testing.T, s string) {
		n := Normalize(s)
		if Normalize(n) != n {
			t.Fatalf("not idempotent: %q → %q → %q", s, n, Normalize(n))
		}
	})
}
