package redact

import (
	"strings"
	"testing"
)

// TestEntropyGate: a rule with an entropy threshold leaves a low-entropy
// value alone even where its regex matches: harmless text next to a rule's
// keyword ("token = aaaa1111…") is not a secret. Each case is a gitleaks
// sample whose secret is replaced by a string of the same length cycling
// two of its own characters (so the rule's character classes still
// match), run through the rule alone; only cases where the regex still
// captures that string count, and at least a handful must.
func TestEntropyGate(t *testing.T) {
	samples, _ := gitleaksSamples(t)
	ls := table().leaks
	byID := map[string]*leakRule{}
	for _, lr := range ls.rules {
		byID[lr.id] = lr
	}
	var sc leakScratch
	tested := map[string]bool{}
	for _, s := range samples {
		lr := byID[s.rule]
		if lr == nil || lr.src.Entropy == 0 || len(s.secret) < 8 {
			continue
		}
		low := lowEntropy(s.secret)
		if low == "" || shannonEntropy(low) > lr.src.Entropy {
			continue
		}
		text := strings.Replace(s.text, s.secret, low, 1)
		lr.ensure()
		m := lr.re().FindStringSubmatchIndex(text)
		g := lr.src.SecretGroup
		if g == 0 && len(m) > 2 {
			g = 1
		}
		if m == nil || 2*g+1 >= len(m) || m[2*g] < 0 || text[m[2*g]:m[2*g+1]] != low {
			continue // the rule's regex no longer takes the low-entropy value
		}
		if allowed(compileAllowlists(lr.src.Allowlists), text, m[0], m[1], low) {
			continue // an allowlist, not the gate, would keep it
		}
		tested[s.rule] = true
		keywordOccurrences(ls, &sc, text)
		if sp := lr.find(ls, &sc, text, 0, len(text), nil, 0); len(sp) > 0 {
			t.Errorf("%s: low-entropy value %q (entropy %.2f ≤ %.2f) was taken as a secret in %q", s.rule, low, shannonEntropy(low), lr.src.Entropy, text)
		}
	}
	if len(tested) < 5 {
		t.Fatalf("the entropy gate was tested on %d rules (%v); want at least 5, or this test proves nothing", len(tested), tested)
	}
	t.Logf("entropy gate held on %d rules", len(tested))
}

// lowEntropy is s's length of its first two distinct characters in turn
// ("" when s has fewer than two).
func lowEntropy(s string) string {
	a := s[0]
	var b byte
	for i := 1; i < len(s); i++ {
		if s[i] != a {
			b = s[i]
			break
		}
	}
	if b == 0 {
		return ""
	}
	out := make([]byte, len(s))
	for i := range out {
		if i%2 == 0 {
			out[i] = a
		} else {
			out[i] = b
		}
	}
	return string(out)
}

// keywordOccurrences fills sc.occ with the keyword occurrences in text, as
// leakSpans does before it runs a rule, for tests that run one rule alone.
func keywordOccurrences(ls *leakSet, sc *leakScratch, text string) {
	sc.occ = sc.occ[:0]
	ls.kw.each(sc.lowered(text), func(pos, pattern int32) {
		sc.occ = append(sc.occ, occurrence{pos, pattern})
	})
}

// TestKeywordSetFindsEveryOccurrence: the two-byte table finds what a
// plain search for each keyword finds, overlapping and repeated
// occurrences included, on the keywords' own text run together.
func TestKeywordSetFindsEveryOccurrence(t *testing.T) {
	ls := table().leaks
	words := ls.kw.words
	text := strings.ToLower(strings.Join(words, "") + " x" + strings.Join(words, "-") + "k")
	want := map[[2]int32]bool{}
	for wi, w := range words {
		for i := 0; i+len(w) <= len(text); i++ {
			if text[i:i+len(w)] == w {
				want[[2]int32{int32(i), int32(wi)}] = true
			}
		}
	}
	got := map[[2]int32]bool{}
	ls.kw.each([]byte(text), func(pos, pattern int32) { got[[2]int32{pos, pattern}] = true })
	if len(got) != len(want) {
		t.Errorf("found %d occurrences, want %d", len(got), len(want))
	}
	for o := range want {
		if !got[o] {
			t.Errorf("missed %q at %d", words[o[1]], o[0])
		}
	}
	// A one-byte keyword is found where it starts a pair.
	k := newKeywordSet([]string{"q", "ab"})
	var n int
	k.each([]byte("xqab qz"), func(pos, pattern int32) { n++ })
	if n != 3 {
		t.Errorf("one-byte keyword: %d occurrences, want 3", n)
	}
}
