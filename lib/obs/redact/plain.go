package redact

import (
	"encoding/base64"
	"strings"
)

// Values that art's own name rules (unsafe-key, url-credentials,
// url-query-secret) take for their name but whose shape says they are no
// secret (a value after "Authorization: Bearer" or curl's -u is one
// whatever its shape). Measured on the real-text and
// source-code sets of scripts/redact-report.sh (docs/artobs.md), these are
// what code, tests and documentation put after a secret's name:
//
//   - a value shorter than minSecret characters ("nope", "off", "u:p"),
//     digits aside (a PIN): too short to be a credential (gitleaks'
//     generic rule needs 10), and in text mostly the next word ("--token
//     and --token-file");
//   - the name of a secret rather than one, maybe with its operator
//     ("Credential="): words of letters (CamelCase,
//     snake_case, kebab-case or dotted) one of which is a secret word
//     ("DelegationToken", "refresh_token", "x-ms-authorization-auxiliary",
//     "fake_token", "wrong-token-wrong-token");
//   - a dotted name of words ("session.new", "oauth2.google.serviceAccount"),
//     or lower-case words joined by '/' and ':' ("foo/system:masters");
//   - a URL's password that is its user name (guest:guest);
//   - unquoted, an ABNF repetition of a rule (passwd = 1*SAFE);
//   - one upper-case word that reads as a word ("OAUTHBEARER"): a
//     constant's value; most of its letter pairs are common English pairs,
//     so a random string of capitals is not one (a lower-case word stays a
//     possible password: "letmein");
//   - an address: an IPv4 address or localhost, with a port;
//   - counting characters named after what they stand for
//     (0123456789abcdef-token), or digits alone ("123456789"): a
//     placeholder;
//   - after a cookie's name, a cookie whose value is plain ("foo=bar",
//     "foo=deleted; expires=…");
//   - printf verbs and separators ("%s/%s"): a value a format fills in;
//   - a message: four words or more, two of them function words, or a
//     printf verb ("idtoken: CredentialsFile and … must not …"), or one
//     lower-case word in quotes that such a message follows on its line
//     ("credentials: \"certificate\" object must either specify a …");
//   - base64 (padded) of one of the above ("ZGVtbw==" is "demo");
//   - a tuple of names ("(username, password)"), a link (an http(s) URL
//     without credentials, query or digits), punctuation alone.
//
// Spans of gitleaks' rules are not dropped for these: a value gitleaks
// finds is redacted whatever its shape.

// minSecret is the length below which a value taken for its name stays.
const minSecret = 6

// secretWords are the words that make a value the name of a secret.
var secretWords = map[string]bool{
	"token": true, "tokens": true, "secret": true, "secrets": true, "password": true,
	"passwords": true, "passwd": true, "pwd": true, "passphrase": true, "credential": true,
	"credentials": true, "cred": true, "creds": true, "auth": true, "authorization": true,
	"oauth": true, "oauth2": true, "bearer": true, "apikey": true, "session": true,
	"cookie": true, "login": true,
}

// functionWords mark prose: a secret holds none of them between spaces.
var functionWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "not": true, "is": true,
	"are": true, "be": true, "must": true, "can't": true, "cannot": true, "should": true,
	"of": true, "to": true, "for": true, "in": true, "on": true, "with": true, "if": true,
	"no": true, "was": true, "will": true, "use": true, "from": true,
}

// plainSpan: x was taken by one of the name rules above, and its value is
// plain. A URL's user name alone is taken for its shape (a token), not
// for a name: it stays taken.
func plainSpan(s string, x span) bool {
	switch x.rule {
	case UnsafeKey, URLQuerySecret:
	case URLCredentials:
		user, pass, ok := strings.Cut(s[x.a:x.b], ":")
		if !ok {
			return false
		}
		if defaultLogin(user, pass) {
			return true
		}
	default:
		return false
	}
	return plainValue(s, x.a, x.b)
}

// plainValue reports whether s[a:b], taken by one of art's own name rules,
// is no secret by its shape (see above).
func plainValue(s string, a, b int) bool {
	v := s[a:b]
	quoted := a > 0 && (s[a-1] == '"' || s[a-1] == '\'' || s[a-1] == '`')
	if !quoted {
		v = strings.TrimRight(v, ",;)")
	}
	if plainShape(v) || !quoted && abnfRepeat(v) || cookieNamed(s, a) && cookiePair(v) || message(v) || messageWord(s, a, b) || nameTuple(s, a) || linkURL(v) || symbolsOnly(s[a:b]) {
		return true
	}
	if d, ok := base64Word(v); ok {
		return plainShape(d)
	}
	return false
}

func plainShape(v string) bool {
	// A name and its operator ("Credential=", "token:"): the prefix a
	// format writes before the value.
	return len(v) < minSecret && strings.Trim(v, "0123456789") != "" || secretName(v) || secretName(strings.TrimRight(v, "=:")) || dottedName(v) || wordPath(v) || upperWord(v) || address(v) ||
		counting(v) && (secretPart(v) || countsOnly(v)) || verbsOnly(v)
}

// countsOnly: v is digits counting up, 8 or more ("123456789"): an
// example's value, no secret.
func countsOnly(v string) bool {
	for i := 1; i < len(v); i++ {
		if v[i] != v[i-1]+1 || !isDigit(v[i]) {
			return false
		}
	}
	return len(v) >= 8
}

// cookieNamed: the value at a follows a name holding "cookie" on its
// line ("Set-Cookie": …, headers.add('Set-Cookie', …)).
func cookieNamed(s string, a int) bool {
	lo := max(0, a-40)
	if k := strings.LastIndexByte(s[lo:a], '\n'); k >= 0 {
		lo += k + 1
	}
	return strings.Contains(strings.ToLower(s[lo:a]), "cookie")
}

// cookiePair: a cookie, name=value and maybe its attributes after ';',
// whose value is plain ("foo=bar", "foo=deleted; expires=Thu, 01-Jan-1970
// …", the value that clears a cookie); a session cookie's value goes.
func cookiePair(v string) bool {
	name, val, ok := strings.Cut(v, "=")
	if !ok || name == "" || len(name) > 32 || runOf(name, 0, alnumDash) != len(name) {
		return false
	}
	val, _, _ = strings.Cut(val, ";")
	if val == "" || val[0] == '=' || !letters[val[0]] {
		return false // base64's padding (yIe0J4cNNQmB==), not a cookie
	}
	return len(val) < minSecret && strings.Trim(val, "0123456789") != "" || placeholderWord(val)
}

// abnfRepeat: an ABNF repetition of a rule, n*RULE or n*m rule-name
// (RFC 5234; "passwd = 1*SAFE" in a comment quoting RFC 1738): a grammar,
// unquoted; the rule's name is letters and '-' in one case.
func abnfRepeat(v string) bool {
	star := strings.IndexByte(v, '*')
	if star < 0 || strings.Trim(v[:star], "0123456789") != "" {
		return false
	}
	rule := strings.TrimLeft(v[star+1:], "0123456789")
	if len(rule) < 2 || !letters[rule[0]] || strings.ToUpper(rule) != rule && strings.ToLower(rule) != rule {
		return false
	}
	return strings.Trim(strings.ToLower(rule), "abcdefghijklmnopqrstuvwxyz-") == ""
}

// defaultLogin: the password is the user name, a word of letters
// (guest:guest, RabbitMQ's default): redacting it hides nothing the
// user name beside it does not show.
func defaultLogin(user, pass string) bool {
	if len(pass) < 4 || pass != user {
		return false
	}
	for i := 0; i < len(pass); i++ {
		if !letters[pass[i]] {
			return false
		}
	}
	return true
}

// wordPath: lower-case names of words joined by '/' and ':'
// ("foo/system:masters", "ns/service-account"): a path or an RBAC
// subject, no digits in it.
func wordPath(v string) bool {
	if !strings.Contains(v, "/") || len(v) > 64 || strings.ToLower(v) != v {
		return false
	}
	for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == '/' || r == ':' }) {
		ws, ok := words(p)
		if !ok || strings.ContainsAny(p, "0123456789") {
			return false
		}
		for _, w := range ws {
			if len(w) < 3 {
				return false
			}
		}
	}
	return strings.Trim(v, "/:") == v && !strings.Contains(v, "//")
}

// words splits v into words on '_', '-', '.' and camelCase boundaries;
// ok is false when v holds anything else, a word has a digit before a
// letter or digits after fewer than three letters (oauth2 is a word, a0
// and H6 are pieces of a token), or more than half the words have one or
// two letters.
func words(v string) (ws []string, ok bool) {
	start := 0
	flush := func(end int) bool {
		if end > start {
			w := v[start:end]
			k := len(w)
			for k > 0 && isDigit(w[k-1]) {
				k--
			}
			if k == 0 || k < len(w) && k < 3 {
				return false
			}
			for i := 0; i < k; i++ {
				if !letters[w[i]] {
					return false
				}
			}
			ws = append(ws, strings.ToLower(w))
		}
		start = end
		return true
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '_' || c == '-' || c == '.':
			if !flush(i) {
				return nil, false
			}
			start = i + 1
		case isUpper(c) && i > 0 && (isLower(v[i-1]) || isDigit(v[i-1])),
			isUpper(c) && i > 0 && isUpper(v[i-1]) && i+1 < len(v) && isLower(v[i+1]):
			if !flush(i) {
				return nil, false
			}
		case !alnum[c]:
			return nil, false
		}
	}
	if !flush(len(v)) {
		return nil, false
	}
	short := 0
	for _, w := range ws {
		if len(w) <= 2 {
			short++
		}
	}
	return ws, len(ws) > 0 && short*2 <= len(ws)
}

// secretName: words of letters in one style of identifier (camelCase,
// CamelCase, or separated words of one case: snake_case, kebab-case,
// SCREAMING_SNAKE), one of them a secret word. "Super_Secret", capitals
// and separators mixed, is how a person writes a password.
func secretName(v string) bool {
	ws, ok := words(v)
	if !ok || len(v) > 64 {
		return false
	}
	if strings.ContainsAny(v, "_-.") && strings.ToLower(v) != v && strings.ToUpper(v) != v {
		return false
	}
	for _, w := range ws {
		if secretWords[w] {
			return true
		}
	}
	return false
}

// secretPart: one of the '_', '-' or '.' separated parts of v is a
// secret word.
func secretPart(v string) bool {
	for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if secretWords[strings.ToLower(p)] {
			return true
		}
	}
	return false
}

// dottedName: two or more dot-separated parts, each a written word or
// identifier (few digits and humps: wordy); digits only in a name of three
// parts or more (hunter2.two may be a password, oauth2.google.scope is a
// name).
func dottedName(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(v) > 64 || len(parts) == 2 && strings.ContainsAny(v, "0123456789") {
		return false
	}
	for _, p := range parts {
		if len(p) > 40 || !wordy(p) {
			return false
		}
		if ws, ok := words(p); !ok || len(ws) == 0 {
			return false
		}
	}
	return true
}

// upperWord: capitals only, up to 16, most pairs common in English.
func upperWord(v string) bool {
	if len(v) > 16 || len(v) < 2 {
		return false
	}
	pairs, common := 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isUpper(c) {
			return false
		}
		if i > 0 {
			pairs++
			if commonPairs[int(v[i-1]|0x20-'a')*26+int(c|0x20-'a')] {
				common++
			}
		}
	}
	return common*2 >= pairs
}

// address: an IPv4 address or localhost, maybe with a port.
func address(v string) bool {
	host, port, found := strings.Cut(v, ":")
	if found && (port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "") {
		return false
	}
	if host == "localhost" {
		return true
	}
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// counting: most of the value counts up (0123456789abcdef-token): runs
// of four or more characters that count up make 8 characters or more and
// 60% of its letters and digits.
func counting(v string) bool {
	n, in, run := 0, 0, 1
	for i := 0; i < len(v); i++ {
		if alnum[v[i]] {
			n++
		}
		if i > 0 && alnum[v[i]] && v[i] == v[i-1]+1 {
			run++
			continue
		}
		if run >= 4 {
			in += run
		}
		run = 1
	}
	if run >= 4 {
		in += run
	}
	return in >= 8 && in*10 >= n*6
}

// verbsOnly: printf verbs and the separators between them (%s/%s).
func verbsOnly(v string) bool {
	n := 0
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune("/:-_.,@ ", r) }) {
		if !formatVerb(f) {
			return false
		}
		n++
	}
	return n > 0
}

// message: four words or more, two of them function words, or a printf
// verb among them.
func message(v string) bool {
	fs := strings.Fields(v)
	if len(fs) < 4 {
		return false
	}
	n := 0
	for _, f := range fs {
		if strings.Contains(f, "%") && formatVerbIn(f) {
			return true
		}
		if functionWords[strings.ToLower(strings.Trim(f, ",.;:\"'`()"))] {
			n++
		}
	}
	return n >= 2
}

// messageWord: s[a:b] is one lower-case word in quotes, and the rest of
// its line is a message.
func messageWord(s string, a, b int) bool {
	if b-a > 16 || a == 0 || strings.IndexByte("\"'`", s[a-1]) < 0 {
		return false
	}
	for i := a; i < b; i++ {
		if !isLower(s[i]) {
			return false
		}
	}
	e := b
	for e < len(s) && strings.IndexByte("\"'`\\", s[e]) >= 0 {
		e++
	}
	le := strings.IndexByte(s[e:], '\n')
	if le < 0 {
		le = len(s)
	} else {
		le += e
	}
	return message(s[e:le])
}

// formatVerbIn: f holds a printf verb after '=' or at its start (now=%v).
func formatVerbIn(f string) bool {
	if k := strings.LastIndexByte(f, '='); k >= 0 {
		f = f[k+1:]
	}
	return formatVerb(f)
}

// base64Word: v is padded base64 of printable text; the text.
func base64Word(v string) (string, bool) {
	if len(v) < 8 || len(v)%4 != 0 || v[len(v)-1] != '=' {
		return "", false
	}
	d, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(d) == 0 {
		return "", false
	}
	for _, c := range d {
		if c < 0x20 || c >= 0x7f {
			return "", false
		}
	}
	return string(d), true
}

// nameTuple: the value at a is a tuple of names, (username, password):
// code. Each name is words (plain.go), so (user, s3cretPw9) is none.
func nameTuple(s string, a int) bool {
	if a >= len(s) || s[a] != '(' {
		return false
	}
	e := strings.IndexByte(s[a:], ')')
	if e < 0 || strings.IndexByte(s[a:a+e], '\n') >= 0 {
		return false
	}
	fs := strings.Split(s[a+1:a+e], ",")
	if len(fs) < 2 {
		return false
	}
	for _, f := range fs {
		f = strings.TrimSpace(f)
		if ws, ok := words(f); !ok || len(ws) == 0 || identEnd(f, 0) != len(f) || strings.ContainsAny(f, "0123456789") {
			return false
		}
	}
	return true
}

// linkURL: an http(s) URL without user, password, query, fragment or
// digits (a link target, ".. _OAuth: https://oauth.net/"); a webhook's
// URL holds its secret in the path, and digits with it.
func linkURL(v string) bool {
	rest, ok := strings.CutPrefix(v, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(v, "http://")
	}
	return ok && rest != "" && !strings.ContainsAny(rest, "@?#&=%0123456789") && !hasToken(rest)
}

// symbolsOnly: punctuation and spaces, no letter or digit, 12 characters
// or a space: the characters a test escapes, not a credential.
func symbolsOnly(v string) bool {
	if strings.TrimSpace(v) == "" || len(v) < 12 && !strings.Contains(v, " ") {
		return false // "!@#$%^&*" is a password people use
	}
	for i := 0; i < len(v); i++ {
		if alnum[v[i]] || v[i] >= 0x80 {
			return false
		}
	}
	return true
}
