package redact

import (
	"encoding/base64"
	"strings"
)

// Two more shapes of bare secrets, beside random.go's tokens:
//
//   - a password as generators write one (found by randomSpans, at its symbols): 10 to 64 characters of letters,
//     digits and symbols, holding upper- and lower-case letters, two
//     digits and one of !@#$~ (not the operators & * ^: maxFDs*4,
//     flags&0x1f), changing between those classes at least every 2.5
//     characters, with no run of four lower-case letters (a word:
//     AzureKeyVault@2), standing alone (spaces, quotes, '=' or ':' around
//     it). It does not start with a symbol (@handle, #tag, $VAR,
//     !negation), holds no '.', '/', '%' or brackets (paths, e-mail
//     addresses, format strings and code stop it), and its line is not a
//     blob (40+ characters without a space: base85 of a git binary patch).
//   - base64 of id:secret (base64Credential), the form of an HTTP Basic
//     credential and of a Docker config's "auth": it decodes to
//     printable text without spaces, an id and a secret of 6+ characters
//     around the first ':', and is no URL (tcp://…).

// pwChar are the bytes of a password token; pwSymbol the symbols one of
// which it must hold.
var (
	pwChar   = makeClass("!@#$^&*~_+-?", true)
	pwSymbol = makeClass("!@#$~", false)
)

const (
	pwMin     = 10
	pwMax     = 64
	pwChanges = 0.4
)

// passwordAt looks at the password token around the symbol at s[i]
// (randomSpans calls it for every symbol it meets); it appends its span
// if it is one and returns the index of the token's last byte.
func passwordAt(s string, i int, sp []span) ([]span, int) {
	a := i
	for a > 0 && pwChar[s[a-1]] {
		a--
	}
	b := runOf(s, i, pwChar)
	if (a > 0 && strings.IndexByte(" \t\r\n\"'`=:,(", s[a-1]) < 0) ||
		(b < len(s) && strings.IndexByte(" \t\r\n\"'`,;)", s[b]) < 0 && !(s[b] == '.' && (b+1 == len(s) || isSpace(s[b+1])))) {
		return sp, b - 1
	}
	if password(s[a:b]) && !blobLine(s, a, b) {
		sp = append(sp, span{a: a, b: b, rule: RandomToken})
	}
	return sp, b - 1
}

// blobLine: the line around s[a:b] is 40 characters or more without a
// space.
func blobLine(s string, a, b int) bool {
	ls, le := lineAround(s, a, b)
	line := strings.TrimRight(s[ls:le], "\r")
	return len(line) >= 40 && !strings.ContainsAny(line, " \t")
}

// password applies the shape tests to one token (see above).
func password(t string) bool {
	if len(t) < pwMin || len(t) > pwMax || !alnum[t[0]] {
		return false
	}
	n, changes := classCounts(t)
	run, symbol := 0, 0
	for i := 0; i < len(t); i++ {
		if isLower(t[i]) {
			if run++; run >= 4 {
				return false
			}
		} else {
			run = 0
		}
		if pwSymbol[t[i]] {
			symbol++
		}
	}
	return n[0] > 0 && n[1] > 0 && n[2] >= 2 && symbol > 0 && float64(changes) >= pwChanges*float64(len(t))
}

// base64Credential: t is base64 of id:secret (see above).
func base64Credential(t string) bool {
	if len(t) < 12 {
		return false
	}
	raw := strings.TrimRight(t, "=")
	var d []byte
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if x, err := enc.DecodeString(raw); err == nil {
			d = x
			break
		}
	}
	if d == nil {
		return false
	}
	bad := 0
	for _, c := range d {
		if c <= ' ' || c >= 0x7f {
			bad++
		}
	}
	if bad*20 > len(d) {
		return false // 5% or more of it is not printable: random bytes
	}
	text := string(d)
	id, secret, ok := strings.Cut(text, ":")
	if !ok || id == "" || len(id) > 64 || len(secret) < minSecret || strings.HasPrefix(secret, "//") {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !alnum[id[i]] && strings.IndexByte("._@+-", id[i]) < 0 {
			return false
		}
	}
	return true
}
