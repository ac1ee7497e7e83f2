package jsonx

// The two pieces of JSON string unescaping every hand-written JSON scanner in
// art needs (the canonicaliser here, the queue's record scanner), kept in one
// place so they cannot drift apart. Policy — what to do with a lone
// surrogate, invalid UTF-8 — stays with each scanner.

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
