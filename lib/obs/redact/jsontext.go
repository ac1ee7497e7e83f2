package redact

import "encoding/json"

// keepJSON keeps a value that is JSON text valid JSON after redaction
// (a command's JSON output, a request body, a lockfile): every span is cut
// to the string literals it covers, never splitting an escape sequence, so
// that no quote, brace, bracket, comma or colon is removed; a span over a
// number or literal (true, false, null) widens to the whole literal, which
// becomes a quoted marker. Text that is not a JSON object or array is
// returned as is.
func keepJSON(s string, sp []span) []span {
	if len(sp) == 0 || !jsonLike(s) || !json.Valid([]byte(s)) {
		return sp
	}
	var out []span
	for _, x := range sp {
		out = jsonPieces(s, x, out)
	}
	return out
}

// jsonLike: the first byte after white space opens an object or array.
func jsonLike(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}

// jsonPieces appends the parts of span x that may be replaced in the valid
// JSON text s.
func jsonPieces(s string, x span, out []span) []span {
	i := 0
	for i < len(s) && i < x.b {
		c := s[i]
		switch {
		case c == '"':
			// A string literal: content [i+1, e).
			j := i + 1
			pa, pb := -1, -1 // the piece, on escape boundaries
			for j < len(s) && s[j] != '"' {
				n := 1
				if s[j] == '\\' {
					n = 2
					if j+1 < len(s) && s[j+1] == 'u' {
						n = 6
					}
				}
				// the unit [j, j+n) belongs to the piece if it overlaps x.
				if j+n > x.a && j < x.b {
					if pa < 0 {
						pa = j
					}
					pb = j + n
				}
				j += n
			}
			if pa >= 0 {
				out = append(out, span{a: pa, b: pb, rule: x.rule})
			}
			i = j + 1
		case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
			j := i
			for j < len(s) && !isJSONDelim(s[j]) {
				j++
			}
			if j > x.a && i < x.b {
				out = append(out, span{a: i, b: j, rule: x.rule, quote: true})
			}
			i = j
		default:
			i++
		}
	}
	return out
}

func isJSONDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"':
		return true
	}
	return false
}
