package provider

import "strings"

// Normalize masks, with "<t>", the text that differs between two runs
// doing the same thing: RFC 3339 and log-style timestamps
// (2026-12-01T09:53:00.123Z, 2026/12/01 09:53:00), Go-style durations
// (0.123s, 1m2.5s, 15ms, 3µs) and go test's "(cached)" in place of a
// duration. It only feeds the request hash: what the model sees is never
// changed. A hand-written scanner rather than a regexp: the hash covers
// the whole history at every step, and a regexp made that the loop's main
// cost.
func Normalize(s string) string {
	var b strings.Builder
	last := 0 // s[last:i] not yet copied
	for i := 0; i < len(s); {
		c := s[i]
		n := 0
		switch {
		case c == '(' && strings.HasPrefix(s[i:], "(cached)"):
			n = len("(cached)")
		case isDigit(c) && (i == 0 || !isAlnum(s[i-1]) && s[i-1] != '.'):
			if n = timestampLen(s[i:]); n == 0 {
				n = durationLen(s[i:])
			}
		}
		if n == 0 {
			i++
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString("<t>")
		i += n
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') || c == '_'
}

// digits is the length of the run of digits at the start of s.
func digits(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// timestampLen matches dddd-dd-dd[T ]dd:dd:dd[.d+][Z|±dd[:]dd] or
// dddd/dd/dd dd:dd:dd[.d+] at the start of s.
func timestampLen(s string) int {
	if len(s) < 19 || digits(s) != 4 {
		return 0
	}
	sep := s[4]
	if sep != '-' && sep != '/' {
		return 0
	}
	ok := digits(s[5:]) == 2 && s[7] == sep && digits(s[8:]) == 2 &&
		(s[10] == ' ' || (sep == '-' && s[10] == 'T')) &&
		digits(s[11:]) == 2 && s[13] == ':' && digits(s[14:]) == 2 && s[16] == ':' && digits(s[17:]) == 2
	if !ok {
		return 0
	}
	n := 19
	if n < len(s) && s[n] == '.' && digits(s[n+1:]) > 0 {
		n += 1 + digits(s[n+1:])
	}
	if sep == '-' && n < len(s) {
		switch s[n] {
		case 'Z':
			n++
		case '+', '-':
			if digits(s[n+1:]) == 4 {
				n += 5
			} else if digits(s[n+1:]) == 2 && n+3 < len(s) && s[n+3] == ':' && digits(s[n+4:]) == 2 {
				n += 6
			}
		}
	}
	return n
}

// durationLen matches [Nh][Nm]N[.N](ns|µs|us|ms|s) at the start of s,
// ending at a word boundary.
func durationLen(s string) int {
	n := 0
	for _, u := range []byte{'h', 'm'} {
		d := digits(s[n:])
		if d > 0 && n+d < len(s) && s[n+d] == u && !(u == 'm' && n+d+1 < len(s) && s[n+d+1] == 's') {
			n += d + 1
		}
	}
	d := digits(s[n:])
	if d == 0 {
		return 0
	}
	n += d
	if n < len(s) && s[n] == '.' && digits(s[n+1:]) > 0 {
		n += 1 + digits(s[n+1:])
	}
	unit := 0
	for _, u := range []string{"ns", "µs", "us", "ms", "s"} {
		if strings.HasPrefix(s[n:], u) {
			unit = len(u)
			break
		}
	}
	if unit == 0 {
		return 0
	}
	n += unit
	if n < len(s) && isAlnum(s[n]) {
		return 0
	}
	return n
}
