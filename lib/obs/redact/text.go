package redact

import (
	"slices"
	"strings"
)

// The text scanner finds secrets inside free text (output lines, command
// arguments, error messages, URLs) in one pass. Most bytes are not the first
// byte of any secret form, so a 256-entry table rejects them; at the few
// trigger bytes a hand-written matcher confirms the exact form. No regular
// expressions: a dozen of them over every string would cost more than the
// rest of the pipeline together.
//
// Matches become spans; overlapping spans merge into one marker so the
// output is a fixed point: redacting it again finds nothing new. Markers
// already present ("[REDACTED:rule]" with a known rule id, or its keyed-hash
// form) are opaque atoms the scanner steps over. A look-alike that is not
// exactly a marker is ordinary text, so a secret cannot be smuggled through
// by wrapping it in "[REDACTED:…]".

type span struct {
	a, b  int
	rule  Rule
	quote bool // the marker replaces a JSON number or literal: write it quoted (see keepJSON)
}

type class [256]bool

func makeClass(extra string, alnum bool) *class {
	var c class
	if alnum {
		for b := 'a'; b <= 'z'; b++ {
			c[b] = true
			c[b-'a'+'A'] = true
		}
		for b := '0'; b <= '9'; b++ {
			c[b] = true
		}
	}
	for i := 0; i < len(extra); i++ {
		c[extra[i]] = true
	}
	return &c
}

var (
	trig       = makeClass("AagxsrneBb-:=[,>", false)
	alnum      = makeClass("", true)
	alnumUnder = makeClass("_", true)
	b64url     = makeClass("_-", true)
	alnumDash  = makeClass("-", true)
	token68    = makeClass("-._~+/=", true)
	ident      = makeClass("_.-", true)
	schemeCh   = makeClass("+.-", true)
	upperDigit = makeClass("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", false)
	letters    = makeClass("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", false)
	digitClass = makeClass("0123456789", false)
	schemeName = makeClass("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-", false)
	urlStop    = makeClass(" \t\n\r\f\v\"'<>`\\", false)
	valueStop  = makeClass(" \t\n\r\f\v\"'<>`,;&)]}", false)
	credStop   = makeClass(" \t\n\r\f\v\"'`\\,;", false)
)

// runOf returns the end of the longest run of bytes in c starting at j.
func runOf(s string, j int, c *class) int {
	for j < len(s) && c[s[j]] {
		j++
	}
	return j
}

func prefixAt(s string, i int, p string) bool {
	return len(s)-i >= len(p) && s[i:i+len(p)] == p
}

// prefixFoldAt is prefixAt ignoring ASCII case; p must be lower case.
func prefixFoldAt(s string, i int, p string) bool {
	if len(s)-i < len(p) {
		return false
	}
	for k := 0; k < len(p); k++ {
		c := s[i+k]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[k] {
			return false
		}
	}
	return true
}

const markerPrefix = "[REDACTED:"

// pastMarker is where a scan standing on s[i] == '[' goes on from: the
// last byte of the marker that starts there, or i when none does (the
// scan's own i++ then steps past either).
func pastMarker(s string, i int) int {
	if n := markerLen(s[i:]); n > 0 {
		return i + n - 1
	}
	return i
}

// markerLen is the length of the marker at the start of s, or 0 if s does
// not start with exactly a marker: "[REDACTED:<rule id>]" or
// "[REDACTED:<rule id>:hmac-sha256:<16 lower-case hex>]".
func markerLen(s string) int {
	if !strings.HasPrefix(s, markerPrefix) {
		return 0
	}
	j := len(markerPrefix)
	for j < len(s) && (isLower(s[j]) || isDigit(s[j]) || s[j] == '-') {
		j++
	}
	if _, ok := table().byID[s[len(markerPrefix):j]]; !ok || j >= len(s) {
		return 0
	}
	if s[j] == ']' {
		return j + 1
	}
	const h = ":hmac-sha256:"
	if !strings.HasPrefix(s[j:], h) {
		return 0
	}
	k := j + len(h)
	if len(s) < k+17 {
		return 0
	}
	for _, c := range []byte(s[k : k+16]) {
		if !isDigit(c) && (c < 'a' || c > 'f') {
			return 0
		}
	}
	if s[k+16] != ']' {
		return 0
	}
	return k + 17
}

// IsMarker reports whether s is exactly one redaction marker.
func IsMarker(s string) bool { return s != "" && markerLen(s) == len(s) }

// startsWithMarker reports whether s begins with a marker.
func startsWithMarker(s string) bool { return markerLen(s) > 0 }

// tokenChar are the characters of a token: letters, digits and "_.~-"
// (URL-safe base64 and the unreserved characters of a URL).
var tokenChar = makeClass("_.~-", true)

// tokenSpan widens the secret [a, b), found by a rule whose whole match is
// [ma, mb), to the token it lies in, so that no part of a token is left
// readable beside its marker: a base64 JWT of which the rule's group is
// the header, a key with its prefix, a URL-safe token with a suffix. A
// token is the longest run of tokenChar around the secret, extended over
// '+' and '/' (standard base64) where the rule's match covers them, and
// over trailing '=' padding; a '.' ending it (a sentence's) is not part of
// it, nor is a letter after a backslash (an escape, \n, in escaped text).
// Redaction never removes a character outside this span.
func tokenSpan(s string, a, b, ma, mb int) (int, int) {
	b64 := func(i int) bool { return i >= ma && i < mb && (s[i] == '+' || s[i] == '/') }
	for a > 0 && (tokenChar[s[a-1]] || b64(a-1)) && !(a >= 2 && s[a-2] == '\\') {
		a--
	}
	end := b
	for end < len(s) && (tokenChar[s[end]] || b64(end)) {
		end++
	}
	for end < len(s) && s[end] == '=' {
		if end+1 < len(s) && tokenChar[s[end+1]] {
			break // "=value": an assignment, not padding
		}
		end++
	}
	for end > b && s[end-1] == '.' {
		end--
	}
	return a, end
}

// findSecrets appends the spans of every secret in s.
func findSecrets(s string, sp []span) []span {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !trig[c] {
			continue
		}
		end, rule := 0, Rule(0)
		switch c {
		case '[':
			i = pastMarker(s, i)
			continue
		case 'A':
			end, rule = matchUpperA(s, i)
			if end == 0 && boundary(s, i, sp, letters) {
				end, rule = matchAuthorization(s, i, &sp)
			}
		case 'a':
			if boundary(s, i, sp, letters) {
				end, rule = matchAuthorization(s, i, &sp)
			}
		case 'g':
			end, rule = matchG(s, i)
		case 'x':
			end, rule = matchSlack(s, i)
		case 's', 'r':
			end, rule = matchSK(s, i, boundary(s, i, sp, alnum))
		case 'n':
			if prefixAt(s, i, "npm_") {
				if e := runOf(s, i+4, alnum); e-(i+4) >= 30 {
					end, rule = e, NPMToken
				}
			}
		case 'e':
			end, rule = matchJWT(s, i)
		case '-':
			end, rule = matchPEM(s, i)
			if end == 0 {
				sp = curlUser(s, i, sp)
			}
			if end == 0 && prefixAt(s, i, "--") {
				sp = flagValue(s, i, sp)
				continue
			}
		case 'B', 'b':
			if boundary(s, i, sp, alnum) {
				end, rule = matchBearer(s, i, &sp)
			}
		case ':':
			if prefixAt(s, i, "://") {
				sp = urlSpans(s, i, sp)
				continue
			}
			sp = assignment(s, i, sp)
			continue
		case '=', ',':
			sp = assignment(s, i, sp)
			continue
		case '>':
			sp = xmlElement(s, i, sp)
			continue
		}
		if end > 0 {
			switch rule {
			case AuthHeader: // auth spans are added by their matcher
			case PrivateKey:
				sp = append(sp, span{a: i, b: end, rule: rule})
			default:
				a, b := tokenSpan(s, i, end, i, end)
				sp = append(sp, span{a: a, b: b, rule: rule})
			}
			i = end - 1
		}
	}
	return sp
}

// boundary reports whether position i starts a word: the byte before is not
// in word, or a span ends there. A span end counts because its text will be
// a marker ending in ']': without it, "AKIA…Authorization: x" would be seen
// differently before and after redaction, and redaction would not be
// idempotent.
func boundary(s string, i int, sp []span, word *class) bool {
	if i == 0 || !word[s[i-1]] {
		return true
	}
	for k := len(sp) - 1; k >= 0; k-- {
		if sp[k].b == i {
			return true
		}
	}
	return false
}

func matchUpperA(s string, i int) (int, Rule) {
	if len(s)-i >= 20 {
		p := s[i : i+4]
		if p == "AKIA" || p == "ASIA" || p == "ABIA" || p == "ACCA" || (p[:3] == "A3T" && upperDigit[p[3]]) {
			if runOf(s[:i+20], i+4, upperDigit) == i+20 && strings.Count(s[i+4:i+20], s[i+4:i+5]) < 16 {
				return i + 20, AWSAccessKey // AKIAXXXXXXXXXXXXXXXX is a placeholder
			}
		}
	}
	if prefixAt(s, i, "AIza") {
		if e := runOf(s, i+4, b64url); e-(i+4) >= 30 {
			return e, GCPAPIKey
		}
	}
	return 0, 0
}

func matchG(s string, i int) (int, Rule) {
	if len(s)-i < 4 {
		return 0, 0
	}
	if s[i+1] == 'h' && s[i+3] == '_' {
		var r Rule
		switch s[i+2] {
		case 'p':
			r = GitHubPAT
		case 'o':
			r = GitHubOAuth
		case 'u', 's':
			r = GitHubAppToken
		case 'r':
			r = GitHubRefreshToken
		default:
			return 0, 0
		}
		if e := runOf(s, i+4, alnum); e-(i+4) >= 30 {
			return e, r
		}
		return 0, 0
	}
	if prefixAt(s, i, "github_pat_") {
		if e := runOf(s, i+11, alnumUnder); e-(i+11) >= 22 {
			return e, GitHubPAT
		}
	}
	if prefixAt(s, i, "glpat-") {
		if e := runOf(s, i+6, b64url); e-(i+6) >= 20 {
			return e, GitLabPAT
		}
	}
	return 0, 0
}

func matchSlack(s string, i int) (int, Rule) {
	start := 0
	if prefixAt(s, i, "xox") && len(s)-i >= 5 && s[i+4] == '-' && strings.IndexByte("abeoprs", s[i+3]) >= 0 {
		start = i + 5
	} else if prefixAt(s, i, "xapp-") {
		start = i + 5
	} else {
		return 0, 0
	}
	if e := runOf(s, start, alnumDash); e-start >= 10 {
		return e, SlackToken
	}
	return 0, 0
}

func matchSK(s string, i int, atBoundary bool) (int, Rule) {
	if len(s)-i < 4 || s[i+1] != 'k' {
		return 0, 0
	}
	switch s[i+2] {
	case '_': // Stripe: sk_live_, rk_live_, sk_test_, rk_test_, sk_prod_
		for _, env := range [...]string{"live_", "test_", "prod_"} {
			if prefixAt(s, i+3, env) {
				// sk_live_publishable_key_name is a variable, not a key.
				if e := runOf(s, i+8, alnum); e-(i+8) >= 10 && randomBody(s[i+8:runOf(s, e, alnumUnder)]) {
					return e, StripeKey
				}
			}
		}
	case '-':
		if s[i] != 's' {
			return 0, 0
		}
		if prefixAt(s, i+3, "ant-") {
			if e := runOf(s, i+7, b64url); e-(i+7) >= 20 {
				return e, AnthropicKey
			}
			return 0, 0
		}
		for _, kind := range [...]string{"proj-", "svcacct-", "admin-"} {
			if prefixAt(s, i+3, kind) {
				if e := runOf(s, i+3+len(kind), b64url); e-(i+3+len(kind)) >= 20 {
					return e, OpenAIKey
				}
				return 0, 0
			}
		}
		e := runOf(s, i+3, alnum)
		n := e - (i + 3)
		if n >= 40 && strings.Contains(s[i+3:e], "T3BlbkFJ") {
			return e, OpenAIKey // legacy keys carry base64("OpenAI")
		}
		// A bare "sk-" needs a word boundary: "task-01J9…" is an id.
		if n >= 32 && atBoundary {
			return e, OpenAIKey
		}
	}
	return 0, 0
}

func matchJWT(s string, i int) (int, Rule) {
	if !prefixAt(s, i, "eyJ") {
		return 0, 0
	}
	e1 := runOf(s, i, b64url)
	if e1-i < 13 || e1 >= len(s) || s[e1] != '.' {
		return 0, 0
	}
	e2 := runOf(s, e1+1, b64url)
	if e2-(e1+1) < 10 || e2 >= len(s) || s[e2] != '.' {
		return 0, 0
	}
	end := runOf(s, e2+1, b64url)
	// JWE has five parts: keep going while dot-separated parts follow.
	for end < len(s) && s[end] == '.' {
		end = runOf(s, end+1, b64url)
	}
	return end, JWT
}

func matchPEM(s string, i int) (int, Rule) {
	if !prefixAt(s, i, "-----BEGIN ") {
		return 0, 0
	}
	head := s[i+11 : min(len(s), i+11+80)]
	h := strings.Index(head, "-----")
	if h < 0 || !strings.Contains(head[:h], "PRIVATE KEY") || runOf(head[:h], 0, pemLabel) != h {
		return 0, 0 // a label is upper case: "-----BEGIN … PRIVATE KEY-----" in a document is not one
	}
	rest := i + 11 + h + 5
	e := strings.Index(s[rest:], "-----END ")
	if e < 0 {
		// Cut output: the rest is key material, if there is some (a line
		// of base64 or an encrypted key's headers); a BEGIN line alone,
		// quoted in prose, is not a key.
		if !pemBody(s[rest:]) {
			return 0, 0
		}
		return len(s), PrivateKey
	}
	e += rest + 9
	t := strings.Index(s[e:min(len(s), e+80)], "-----")
	if t < 0 {
		return len(s), PrivateKey
	}
	return e + t + 5, PrivateKey
}

// pemLabel are the bytes of a PEM label (RFC 7468: "RSA PRIVATE KEY").
var pemLabel = makeClass("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ", false)

// pemBody reports whether the text after a BEGIN line starts with key
// material: within its first lines, a line of 16+ base64 characters or the
// Proc-Type header of an encrypted legacy key. The lines may be indented
// or prefixed as a diff or a quoted string writes them ("+", "\n").
func pemBody(s string) bool {
	s = strings.ReplaceAll(s[:min(len(s), 512)], `\n`, "\n")
	for n, line := range strings.Split(s, "\n") {
		if n > 3 {
			break
		}
		line = strings.TrimLeft(line, " \t+-\"'>")
		if strings.HasPrefix(line, "Proc-Type:") || runOf(line, 0, b64Std) >= 16 {
			return true
		}
	}
	return false
}

// b64Std: the standard base64 alphabet with padding.
var b64Std = makeClass("+/=", true)

// matchAuthorization handles "Authorization: <scheme> <credentials>" (and
// Proxy-Authorization, and name = value forms). The scheme stays; the
// credentials go. It adds its own span and returns the end of the header.
func matchAuthorization(s string, i int, sp *[]span) (int, Rule) {
	if !prefixFoldAt(s, i, "authorization") {
		return 0, 0
	}
	j := i + len("authorization")
	named := j // the name's closing quote, if any, ends here
	if j < len(s) && (s[j] == '"' || s[j] == '\'') {
		j++
	} else if prefixAt(s, j, `\"`) {
		j += 2
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) || (s[j] != ':' && s[j] != '=') {
		return 0, 0
	}
	j++
	if j < len(s) && i > 0 && named == j-1 && (s[j] == '"' || s[j] == '\'') && s[i-1] == s[j] {
		return 0, 0 // b'Authorization:' not in …: the literal is the name alone
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '"' || s[j] == '\'') {
		j++
	}
	if prefixAt(s, j, `\"`) {
		j += 2
	}
	c := j
	w := runOf(s, j, schemeName)
	digest := false
	if w > j && w < len(s) && s[w] == ' ' {
		digest = strings.EqualFold(s[j:w], "digest")
		c = w
		for c < len(s) && s[c] == ' ' {
			c++
		}
	}
	end := c
	if digest {
		for end < len(s) && s[end] != '\n' && s[end] != '\r' {
			end++
		}
		if a, b, ok := digestResponse(s, c, end); ok {
			// Only the response is derived from the password; username,
			// realm, nonce, uri, qop, nc, cnonce and opaque are not.
			if b > a && !startsWithMarker(s[a:]) {
				*sp = append(*sp, span{a: a, b: b, rule: AuthHeader})
			}
			return end, AuthHeader
		}
	} else {
		for end < len(s) && !credStop[s[end]] {
			if s[end] == '[' && startsWithMarker(s[end:]) {
				break
			}
			end++
		}
	}
	if end > c && !startsWithMarker(s[c:]) && !(basic(s[j:c]) && emptyPassword(s[c:end])) {
		*sp = append(*sp, span{a: c, b: end, rule: AuthHeader})
	}
	if end == c {
		return c, AuthHeader
	}
	return end, AuthHeader
}

// digestResponse: the bounds of the response parameter's value in the
// Digest credentials s[c:end] ("response=\"6bf5…\"", quoted or not). ok
// is false when s[c:end] does not open with one of Digest's parameters
// (then all of it is the credential); a line of parameters without a
// response has none.
func digestResponse(s string, c, end int) (a, b int, ok bool) {
	v := s[c:end]
	k := strings.IndexByte(v, '=')
	if k <= 0 || !digestParams[strings.ToLower(v[:k])] {
		return 0, 0, false
	}
	lv := strings.ToLower(v)
	for k := 0; ; {
		i := strings.Index(lv[k:], "response=")
		if i < 0 {
			return c, c, true
		}
		k += i
		if k > 0 && ident[v[k-1]] {
			k++
			continue // cresponse=
		}
		a = k + len("response=")
		if a < len(v) && v[a] == '"' {
			a++
			b = a
			for b < len(v) && v[b] != '"' {
				b++
			}
		} else {
			b = a
			for b < len(v) && !credStop[v[b]] {
				b++
			}
		}
		return c + a, c + b, true
	}
}

// digestParams are the parameter names of RFC 7616's credentials.
var digestParams = map[string]bool{
	"username": true, "username*": true, "realm": true, "nonce": true, "uri": true, "response": true,
	"algorithm": true, "cnonce": true, "opaque": true, "qop": true, "nc": true, "userhash": true,
}

// basic: the scheme word before the credentials is Basic.
func basic(scheme string) bool {
	return len(scheme) >= 5 && strings.EqualFold(strings.TrimSpace(scheme), "basic")
}

// emptyPassword: base64 of "user:" (an id and an empty password), the
// credential of a test that sends none: it holds no secret.
func emptyPassword(v string) bool {
	d, ok := base64Word(v)
	return ok && len(d) >= 2 && strings.IndexByte(d, ':') == len(d)-1
}

// matchBearer handles a bare "Bearer <token>" outside an Authorization
// header: the token must be 16+ characters so prose ("bearer bonds") stays.
func matchBearer(s string, i int, sp *[]span) (int, Rule) {
	if !prefixFoldAt(s, i, "bearer ") {
		return 0, 0
	}
	c := i + 7
	for c < len(s) && s[c] == ' ' {
		c++
	}
	e := runOf(s, c, token68)
	if e-c < 16 {
		return 0, 0
	}
	*sp = append(*sp, span{a: c, b: e, rule: AuthHeader})
	return e, AuthHeader
}

// urlSpans masks the credentials of scheme://userinfo@host (any scheme):
// the password of user:password, and the user name too when it looks like
// a token (https://TOKEN@host, https://TOKEN:x-oauth-basic@host), and the
// values of secret-named parameters in the query and in the fragment
// (#access_token=… of an OAuth redirect). The scanner goes on scanning the
// URL's text afterwards (a token anywhere in it is still a token).
func urlSpans(s string, i int, sp []span) []span {
	j := i
	for j > 0 && schemeCh[s[j-1]] {
		j--
	}
	if j == i || !letters[s[j]] {
		return sp
	}
	a := i + 3
	e := a
	for e < len(s) && !urlStop[s[e]] && s[e] != '/' && s[e] != '?' && s[e] != '#' {
		e++
	}
	if at := strings.LastIndexByte(s[a:e], '@'); at >= 0 {
		sp = userinfoSpans(s, a, a+at, sp)
	}
	q := e
	for q < len(s) && !urlStop[s[q]] && s[q] != '?' && s[q] != '#' {
		q++
	}
	if q < len(s) && s[q] == '?' {
		sp, q = paramSpans(s, q+1, true, sp)
	}
	if q < len(s) && s[q] == '#' {
		sp, _ = paramSpans(s, q+1, false, sp)
	}
	return sp
}

// userinfoSpans masks the userinfo s[a:b] of a URL (or curl's -u value):
// user:password goes whole, one marker for both halves (a user name is
// half of a Basic credential, and some keys are written id:secret, as
// Sidekiq's are), unless the password is a reference or a placeholder
// (https://${USER}:${TOKEN}@, user:<password>); a user name alone only
// when it looks like a token (https://TOKEN@host).
func userinfoSpans(s string, a, b int, sp []span) []span {
	ui := s[a:b]
	user := ui
	if c := indexOutsideMarkers(ui, ':'); c >= 0 {
		user = ui[:c]
		pw := ui[c+1:]
		if pw != "" && !IsMarker(pw) && !isReference(s, a+c+1, b) && !benignValue(pw) {
			if strings.Contains(user, markerPrefix) {
				a += strings.LastIndex(user, "]") + 1 // TOKEN:x was redacted in part before: keep its marker
			}
			return append(sp, span{a: a, b: b, rule: URLCredentials})
		}
	}
	if tokenLikeUser(user) || len(user) >= randomMin && randomToken(user) {
		sp = append(sp, span{a: a, b: a + len(user), rule: URLCredentials})
	}
	return sp
}

// paramSpans masks the values of secret-named name=value pairs from k on,
// separated by '&' or ';', up to the end of the URL (in a query, up to a
// '#'). It returns the spans and where it stopped.
func paramSpans(s string, k int, query bool, sp []span) ([]span, int) {
	stop := func(c byte) bool { return urlStop[c] || (query && c == '#') }
	for k < len(s) && !stop(s[k]) {
		ns := k
		for k < len(s) && !stop(s[k]) && s[k] != '=' && s[k] != '&' && s[k] != ';' {
			k++
		}
		name := s[ns:k]
		if k < len(s) && s[k] == '=' {
			k++
			vs := k
			for k < len(s) && !stop(s[k]) && s[k] != '&' && s[k] != ';' {
				k++
			}
			if vs < k && !IsMarker(s[vs:k]) && unsafeQueryName(name) {
				sp = append(sp, span{a: vs, b: k, rule: URLQuerySecret})
			}
		}
		if k < len(s) && (s[k] == '&' || s[k] == ';') {
			k++
		}
	}
	return sp, k
}

// tokenLikeUser: a URL's user name that is a credential, not a login: 16
// or more characters mixing two of lower case, upper case and digits
// ("git", "oauth2", "x-access-token", "deploy-bot" stay), or 32 or more.
func tokenLikeUser(u string) bool {
	if len(u) < 16 || IsMarker(u) || strings.Contains(u, markerPrefix) {
		return false
	}
	var lower, upper, digit bool
	for i := 0; i < len(u); i++ {
		lower = lower || isLower(u[i])
		upper = upper || isUpper(u[i])
		digit = digit || isDigit(u[i])
	}
	n := 0
	for _, b := range []bool{lower, upper, digit} {
		if b {
			n++
		}
	}
	return n >= 2 || len(u) >= 32
}

func indexOutsideMarkers(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '[' {
			if n := markerLen(s[i:]); n > 0 {
				i += n - 1
				continue
			}
		}
		if s[i] == c {
			return i
		}
	}
	return -1
}

// assignment masks the value of a secret-named assignment at the operator
// at i: name=value, name: value, "name": "value", --name=value, and the
// forms of the common languages and config formats: name := value (Go),
// ?=, ::=, :::= (Make), .= (PHP), => (PHP, Ruby, Perl), name: type = value
// and var name type = value (Go, TS, Kotlin), setProperty("NAME", "value")
// (a quoted name, a comma, a quoted value), <add key="NAME" value="…"/>
// (.NET config), with any alignment before the operator.
func assignment(s string, i int, sp []span) []span {
	op := s[i]
	if op == ':' && i+1 < len(s) && (s[i+1] == '=' || s[i+1] == ':') {
		return sp // ":=", "::=": the '=' that ends the operator decides
	}
	j := i
	if op == '=' {
		// The rest of a multi-character operator: ":=", "::=", "?=", ".=",
		// "+=", "!=" is not an assignment.
		for j > 0 && i-j < 3 && (s[j-1] == ':' || s[j-1] == '?' || s[j-1] == '.' || s[j-1] == '+') {
			j--
		}
		if (j > 0 && (s[j-1] == '!' || s[j-1] == '<' || s[j-1] == '>' || s[j-1] == '=')) || (i+1 < len(s) && s[i+1] == '=') {
			return sp // a comparison
		}
	}
	ns, ne, quoted := nameBefore(s, j)
	if op == ':' && ns < ne && s[ns] == '$' {
		return sp // a shell expansion before a ':' ($PWD:/src), not a name: value
	}
	if op == ',' && (!quoted || !firstArgument(s, ns)) {
		return sp // only f("NAME", "value"): a comma is too common otherwise
	}
	name := s[ns:ne]
	if typeWords[name] {
		// "var password string = …", "password: string = …".
		k := ns
		for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t' || s[k-1] == ':') {
			k--
		}
		if k < ns {
			ns, ne, _ = nameBefore(s, k)
			name = s[ns:ne]
		}
	}
	if strings.EqualFold(name, "value") && op == '=' {
		name = addKeyName(s, ns)
	}
	if !unsafeName(name) || (op == ':' && ns >= 3 && s[ns-3:ns] == "://") || goTestLine(s, ns, name) {
		return sp // "scheme://name:password@" belongs to the URL rule
	}
	k := i + 1
	if op == '=' && k < len(s) && s[k] == '>' {
		k++ // "=>"
	}
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if op == ',' && (k >= len(s) || (s[k] != '"' && s[k] != '\'')) {
		return sp
	}
	if k < len(s) && (s[k] == '"' || s[k] == '\'' || s[k] == '`') && closesLiteral(s, k) && insideString(s, ns, quoted, s[k]) {
		// "Password: " + x, getpass("Password: "): the name is text in a
		// string literal and the quote after it closes that literal.
		return sp
	}
	if op == ':' {
		// "name: string = value": the type, not the value.
		e := runOf(s, k, ident)
		if typeWords[s[k:e]] {
			for e < len(s) && s[e] == ' ' {
				e++
			}
			if e < len(s) && s[e] == '=' {
				return sp
			}
		}
	}
	n := len(sp)
	sp = valueSpan(s, k, sp)
	if op == ':' && len(sp) > n && ns > 0 && (s[ns-1] == '\'' || s[ns-1] == '"') && !quoted {
		// A quoted header, 'X-Api-Key: v}a]l,u;e': the value runs to the
		// quote that closes it, over the brackets and separators that end
		// a bare value in code.
		x := &sp[len(sp)-1]
		if q := strings.IndexByte(s[x.b:], s[ns-1]); q > 0 && !strings.ContainsAny(s[x.b:x.b+q], "\n\r") && s[x.a-1] != s[ns-1] {
			x.b += q
		}
	}
	return sp
}

// firstArgument: the quoted name starting at ns is the first argument of
// a call, f("NAME", …), not an item of a list.
func firstArgument(s string, ns int) bool {
	k := ns - 1 // the opening quote
	if k > 0 && s[k-1] == '\\' {
		k--
	}
	for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
		k--
	}
	return k > 0 && s[k-1] == '('
}

// insideString reports whether the name starting at ns lies inside a
// string literal quoted with q that opens earlier on its line: an odd
// number of unescaped q before it (before its own opening quote, when the
// name is quoted).
func insideString(s string, ns int, quoted bool, q byte) bool {
	end := ns
	if quoted {
		end--
		if end > 0 && s[end-1] == '\\' {
			return false // {\"token\": \"…\"}: escaped JSON, see valueSpan
		}
	}
	ls := strings.LastIndexByte(s[:end], '\n') + 1
	n := 0
	for k := ls; k < end; k++ {
		if s[k] == q && (k == 0 || s[k-1] != '\\') {
			n++
		}
	}
	return n%2 == 1
}

// closesLiteral: the quote at k is followed by what follows the end of a
// string literal in code (")", ",", " + x", " % x", the end of the line),
// not by a value.
func closesLiteral(s string, k int) bool {
	k++
	if k >= len(s) || s[k] == '\n' || s[k] == '\r' {
		return true
	}
	if strings.IndexByte("),;]}", s[k]) >= 0 {
		return true
	}
	for _, op := range []string{" + ", "+", " % ", " . ", " .. ", " || ", " in ", " not in ", " == ", " != "} {
		if strings.HasPrefix(s[k:], op) {
			return true
		}
	}
	return false
}

// typeWords are type names that sit between a name and its '='.
var typeWords = map[string]bool{"string": true, "String": true, "str": true, "char": true}

// nameBefore finds the name that ends at j (after spaces and one quote):
// its bounds and whether it was quoted.
func nameBefore(s string, j int) (int, int, bool) {
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	quoted := false
	if j > 0 && (s[j-1] == '"' || s[j-1] == '\'' || s[j-1] == '`') {
		j--
		quoted = true
		if j > 0 && s[j-1] == '\\' {
			j--
		}
	}
	ne := j
	for j > 0 && ne-j < maxKeyClassify && (ident[s[j-1]] || s[j-1] == '$') {
		j--
	}
	if ne-j < maxKeyClassify && j > 0 && s[j-1] == '$' {
		j-- // PHP and shell variables
	}
	if quoted && (j == 0 || (s[j-1] != '"' && s[j-1] != '\'' && s[j-1] != '`')) {
		quoted = false
	}
	return j, ne, quoted
}

// addKeyName: for value= inside <add key="NAME" value="…"/>, the NAME.
func addKeyName(s string, ns int) string {
	lo := max(0, ns-160)
	seg := s[lo:ns]
	k := strings.LastIndex(seg, "key=")
	if k < 0 || strings.LastIndexByte(seg, '<') < 0 || strings.LastIndexByte(seg, '>') > k {
		return "value"
	}
	rest := seg[k+4:]
	if rest == "" || (rest[0] != '"' && rest[0] != '\'') {
		return "value"
	}
	e := strings.IndexByte(rest[1:], rest[0])
	if e < 0 {
		return "value"
	}
	return rest[1 : 1+e]
}

// goTestLine: "--- PASS: TestTokenRefresh (0.00s)" is test output, not
// the password "TestTokenRefresh".
func goTestLine(s string, ns int, name string) bool {
	return (name == "PASS" || name == "pass") && ns >= 4 && s[ns-4:ns] == "--- "
}

// valueSpan masks the value starting at k: quoted ('…', "…", `…`, \"…\"),
// or a bare word up to a delimiter (a backslash only ends it before an
// escape letter: "pa\ss" stays whole, the \n of escaped text ends it).
func valueSpan(s string, k int, sp []span) []span {
	var end int
	switch {
	case k < len(s) && (s[k] == '"' || s[k] == '\'' || s[k] == '`'):
		q := s[k]
		k++
		end = k
		for end < len(s) && s[end] != q && s[end] != '\n' {
			if s[end] == '\\' {
				end++
			}
			end++
		}
		end = min(end, len(s))
	case prefixAt(s, k, `\"`):
		k += 2
		if e := strings.Index(s[k:], `\"`); e >= 0 {
			end = k + e
		} else {
			end = k + strings.IndexByte(s[k:]+"\n", '\n')
		}
	case k < len(s) && (s[k] == '{' || s[k] == '['):
		return sp // an object or array (JSON, a YAML flow): its members are scanned on their own
	default:
		end = k
		for end < len(s) && !valueStop[s[end]] {
			if s[end] == '[' && startsWithMarker(s[end:]) {
				break
			}
			if s[end] == '\\' && end+1 < len(s) && strings.IndexByte(`nrt"'\`, s[end+1]) >= 0 {
				break
			}
			end++
		}
	}
	if end <= k || startsWithMarker(s[k:]) {
		return sp
	}
	switch s[k:end] {
	case "null", "true", "false":
		return sp
	}
	return append(sp, span{a: k, b: end, rule: UnsafeKey})
}

// flagValue masks the word after "--name " in free text when the name
// says it is a secret: "deploy --token S --verbose". The "--name=value"
// form is an assignment.
func flagValue(s string, i int, sp []span) []span {
	if i > 0 && !(s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '"' || s[i-1] == '\'' || s[i-1] == '\n') {
		return sp
	}
	j := i + 2
	e := runOf(s, j, ident)
	if e == j || e >= len(s) || (s[e] != ' ' && s[e] != '\t') || !unsafeName(s[j:e]) {
		return sp
	}
	k := e
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k >= len(s) || s[k] == '-' || s[k] == '\n' {
		return sp
	}
	return valueSpan(s, k, sp)
}

// curlUser masks the user:password after curl's -u, --user, -U or
// --proxy-user at i (-u user:pw, -u 'user:pw', --user=user:pw), whole: the
// user is half of the Basic credential curl sends. The flag must follow
// "curl" on the same command (at most five lines before, as gitleaks' rule
// has it): elsewhere -u is docker's UID:GID or git's upstream. A value
// without a password (curl prompts for it) or whose password is a
// reference or placeholder stays.
func curlUser(s string, i int, sp []span) []span {
	if i > 0 && !isSpace(s[i-1]) {
		return sp
	}
	j := i + 1
	switch {
	case prefixAt(s, j, "u") || prefixAt(s, j, "U"):
		j++
	case prefixAt(s, j, "-user"):
		j += 5
	case prefixAt(s, j, "-proxy-user"):
		j += 11
	default:
		return sp
	}
	if j < len(s) && s[j] == '=' && s[j-1] == 'r' {
		j++
	} else {
		k := j
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		if k == j {
			return sp
		}
		j = k
	}
	if !afterCurl(s, i) {
		return sp
	}
	a, b := j, j
	if j < len(s) && (s[j] == '"' || s[j] == '\'') {
		a = j + 1
		e := strings.IndexByte(s[a:], s[j])
		if e < 0 {
			return sp
		}
		b = a + e
	} else {
		for b < len(s) && !isSpace(s[b]) && s[b] != '"' && s[b] != '\'' && s[b] != '\\' && s[b] != '`' {
			b++
		}
	}
	c := indexOutsideMarkers(s[a:b], ':')
	if c < 0 || a+c+1 == b || IsMarker(s[a+c+1:b]) || isReference(s, a+c+1, b) || benignValue(s[a+c+1:b]) {
		return sp
	}
	if u := s[a : a+c]; strings.Contains(u, markerPrefix) {
		a += strings.LastIndex(u, "]") + 1
	}
	return append(sp, span{a: a, b: b, rule: CurlAuthUser})
}

// afterCurl reports whether the word "curl" starts the command that the
// flag at i belongs to: on the same line, or up to five lines before.
func afterCurl(s string, i int) bool {
	lo := max(0, i-1024)
	k := strings.LastIndex(s[lo:i], "curl")
	if k < 0 {
		return false
	}
	k += lo
	if (k > 0 && alnumUnder[s[k-1]]) || (k+4 < len(s) && alnumUnder[s[k+4]]) {
		return false
	}
	return strings.Count(s[k:i], "\n") <= 5
}

// xmlElement masks the text of <password>S</password> (a secret-named
// element, up to its closing tag).
func xmlElement(s string, i int, sp []span) []span {
	j := i
	for j > 0 && i-j < maxKeyClassify && (ident[s[j-1]] || s[j-1] == ':') {
		j--
	}
	if j == 0 || s[j-1] != '<' || j == i || !unsafeName(s[j:i]) {
		return sp
	}
	k := i + 1
	e := strings.Index(s[k:], "</")
	if e < 0 {
		return sp
	}
	a, b := k, k+e
	for a < b && isSpace(s[a]) {
		a++
	}
	for b > a && isSpace(s[b-1]) {
		b--
	}
	if b <= a || startsWithMarker(s[a:]) {
		return sp
	}
	return append(sp, span{a: a, b: b, rule: UnsafeKey})
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// mergeSpans sorts spans by start (longest first on ties) and drops or
// merges overlaps; the outermost span's rule names the merged marker.
func mergeSpans(sp []span) []span {
	if len(sp) < 2 {
		return sp
	}
	slices.SortStableFunc(sp, func(x, y span) int {
		if x.a != y.a {
			return x.a - y.a
		}
		return y.b - x.b
	})
	out := sp[:1]
	for _, s := range sp[1:] {
		last := &out[len(out)-1]
		if s.a < last.b {
			last.b = max(last.b, s.b)
			last.quote = last.quote || s.quote
			continue
		}
		out = append(out, s)
	}
	return out
}
