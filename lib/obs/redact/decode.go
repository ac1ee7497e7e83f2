package redact

import (
	"encoding/base64"
	"encoding/hex"
	"unicode/utf8"
)

// Secrets in encoded text are found as gitleaks' decoder finds them, and
// further: runs of base64 (standard or URL alphabet, padded or not) and of
// hex digits are decoded, as is percent-encoding; what decodes to text is
// scanned with every rule, and decoded again, down to maxDecodeDepth
// levels (base64 of a config holding a percent-encoded URL holding a
// token). A secret found in a base64 or hex run removes the whole run; one
// found in percent-encoded text removes the encoded bytes of its token
// (each decoded byte knows where it came from). Backslash escapes (JSON,
// shell, \xHH) are undone by the pattern scan itself (see leakSet.scan).
//
// Decoding is bounded: runs shorter than minEncoded are not tried, at most
// maxDecoded bytes are decoded per value, and a run decodes to text only if
// every byte of it is printable (random and binary data fail within a few
// bytes), so ordinary text, hashes and ids cost one pass over their bytes.

const (
	maxDecodeDepth = 3
	minEncoded     = 16
	maxDecoded     = 64 << 10
)

// b64Char: the characters of a base64 run (both alphabets).
var b64Char = makeClass("+/_-", true)

// decodeState bounds the decoding of one value.
type decodeState struct {
	budget int
	buf    []byte
}

// decodedSpans appends the spans of secrets found in the encoded runs of s
// (already scanned as it is into sp, whose spans it skips).
func (w *walker) decodedSpans(s string, sp []span) []span {
	if len(s) < minEncoded {
		return sp
	}
	ds := decodeState{budget: maxDecoded, buf: w.decBuf}
	sp = w.decodeRuns(&ds, s, sp, 1)
	w.decBuf = ds.buf[:0]
	return sp
}

func (w *walker) decodeRuns(ds *decodeState, s string, sp []span, depth int) []span {
	n := len(sp)
	for i := 0; i < len(s) && ds.budget > 0; i++ {
		c := s[i]
		if c == '[' {
			i = pastMarker(s, i)
			continue
		}
		if c == '%' {
			a, b, ok := percentRun(s, i)
			if ok {
				sp = w.decodePercent(ds, s, a, b, sp, depth)
			}
			i = b - 1 // the run is done either way
			continue
		}
		if !b64Char[c] {
			continue
		}
		a := i
		b := runOf(s, i, b64Char)
		e := b
		for e < len(s) && e-b < 2 && s[e] == '=' {
			e++
		}
		i = b - 1
		if b-a < minEncoded || coveredAny(sp[:n], a, e) {
			continue
		}
		if r, ok := w.decodeRun(ds, s[a:b], depth); ok {
			sp = append(sp, span{a: a, b: e, rule: r})
		}
	}
	return sp
}

// coveredAny reports whether [a, b) overlaps one of the spans.
func coveredAny(sp []span, a, b int) bool {
	for _, x := range sp {
		if x.a < b && a < x.b {
			return true
		}
	}
	return false
}

// decodeRun decodes a hex or base64 run; if it is text holding a secret,
// it returns the secret's rule.
func (w *walker) decodeRun(ds *decodeState, run string, depth int) (Rule, bool) {
	text, ok := ds.decode(run)
	if !ok {
		return 0, false
	}
	found := w.secretsIn(ds, text, nil, depth)
	if len(found) == 0 {
		return 0, false
	}
	return found[0].rule, true
}

// decode turns a run into text: hex if it is an even run of hex digits,
// else base64 in the alphabet its characters say. ok is false when the
// result is not printable text.
func (ds *decodeState) decode(run string) (string, bool) {
	var out []byte
	var err error
	if isHexRun(run) {
		out, err = hex.AppendDecode(ds.buf[:0], []byte(run))
	} else {
		url, std := false, false
		for i := 0; i < len(run); i++ {
			switch run[i] {
			case '-', '_':
				url = true
			case '+', '/':
				std = true
			}
		}
		if url && std {
			return "", false
		}
		enc := base64.RawStdEncoding
		if url {
			enc = base64.RawURLEncoding
		}
		if len(run)%4 == 1 {
			run = run[:len(run)-1] // a stray character after the data
		}
		out, err = enc.AppendDecode(ds.buf[:0], []byte(run))
	}
	ds.buf = out[:0]
	if err != nil || len(out) < 8 || !printable(out) {
		return "", false
	}
	ds.budget -= len(out)
	return string(out), true
}

func isHexRun(s string) bool {
	if len(s)%2 != 0 || len(s) < 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// printable: UTF-8 text without control characters but tab and newlines.
func printable(b []byte) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(b)
}

// secretsIn scans decoded text with every rule, and its own encoded runs
// one level further down, appending the spans (in text's coordinates).
func (w *walker) secretsIn(ds *decodeState, text string, sp []span, depth int) []span {
	sp = findSecrets(text, sp)
	var lk leakScratch
	sp = table().leaks.scan(&lk, "", text, sp)
	sp = dropBenign(text, sp) // as in the text as written: ?key=value is none
	if depth < maxDecodeDepth && ds.budget > 0 {
		sp = w.decodeRuns(ds, text, sp, depth+1)
	}
	return sp
}

// percentRun is the run of URL characters around the '%' at i (the text
// between white space, quotes and brackets), and whether it holds a %XX
// escape.
func percentRun(s string, i int) (int, int, bool) {
	a := i
	for a > 0 && !urlStop[s[a-1]] && s[a-1] != '[' && s[a-1] != ']' {
		a--
	}
	b := i
	for b < len(s) && !urlStop[s[b]] && s[b] != '[' && s[b] != ']' {
		b++
	}
	for k := i; k+2 < b; k++ {
		if s[k] == '%' && isHex(s[k+1]) && isHex(s[k+2]) {
			return a, b, true
		}
	}
	return a, b, false
}

func isHex(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

// decodePercent scans the percent-decoded form of s[a:b] and maps what it
// finds back onto the encoded bytes.
func (w *walker) decodePercent(ds *decodeState, s string, a, b int, sp []span, depth int) []span {
	run := s[a:b]
	view := make([]byte, 0, len(run))
	pos := make([]int, 0, len(run)+1)
	for k := 0; k < len(run); k++ {
		if run[k] == '%' && k+2 < len(run) && isHex(run[k+1]) && isHex(run[k+2]) {
			view = append(view, unhex(run[k+1])<<4|unhex(run[k+2]))
			pos = append(pos, k)
			k += 2
			continue
		}
		view = append(view, run[k])
		pos = append(pos, k)
	}
	pos = append(pos, len(run))
	if !utf8.Valid(view) {
		return sp
	}
	ds.budget -= len(view)
	found := w.secretsIn(ds, string(view), nil, depth)
	for _, x := range found {
		sp = append(sp, span{a: a + pos[x.a], b: a + pos[x.b], rule: x.rule})
	}
	return sp
}

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
