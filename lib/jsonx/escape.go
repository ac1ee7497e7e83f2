package jsonx

import "unicode/utf8"

// The two pieces of JSON string unescaping every hand-written JSON scanner in
// art needs (the canonicaliser here, the queue's record scanner), kept in one
// place so they cannot drift apart. Policy — what to do with a lone
// surrogate, invalid UTF-8 — stays with each scanner. And the one
// hand-written string encoder, AppendString.

// Hex4 decodes the four hex digits of a \uXXXX escape at the start of b.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// SimpleEscape is the byte a one-character escape (\" \\ \/ \b \f \n \r \t)
// stands for; ok is false for 'u' and for anything JSON does not allow.
func SimpleEscape(c byte) (b byte, ok bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// AppendString appends s as a JSON string exactly as encoding/json writes
// it with SetEscapeHTML(false): quote, backslash and control characters
// escaped (\b \f \n \r \t short, the rest \u00XX), U+2028 and U+2029
// escaped, invalid UTF-8 as \ufffd. It is the one hand-written encoder of
// that form (the Result, the supervisor's reports), for the paths where
// encoding/json's reflection costs more than the write.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = appendEscapedASCII(append(dst, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}
