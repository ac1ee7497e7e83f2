package redact

import (
	"slices"
	"strings"
)

// Values that are not secrets even where a secret is expected: the rules
// that find a secret by its name (unsafe-key, url-credentials,
// url-query-secret, auth-header) and gitleaks' rules, which mostly do the
// same, take whatever follows the name. In real text that is often not a
// secret at all:
//
//   - code: a call (getpass.getpass(…)), an index (os.environ["TOKEN"]), an
//     attribute of a known object (self.token, config.api_key, process.env.X,
//     secrets.GITHUB_TOKEN; also before the brackets that close its call),
//     an operator expression (a + b, x or ""), a variable closing its call
//     (proxy_auth_value}), an attribute of self or this set to a variable,
//     Go setting a field or declaring a variable from another variable,
//     a number under a name that counts (…_MIN_REVISION_…_SECRET = 54441);
//   - a template or CI reference: ${{ … }}, ${VAR}, $VAR, $(…), {{ … }},
//     %{…}, #{…}, <%= … %>, %VAR%, {name}, {} and {0}, %(name)s, and
//     CloudFormation's !Ref / !Sub / !GetAtt;
//   - a label in a terminal colour (\x1b[32mPASS);
//   - a placeholder: :name, <name>, YOUR_…, your-…, xxxx…, ****, and the
//     words in placeholderWords;
//   - an integrity hash: go.sum's h1:…, npm's sha512-… (sha1, sha256,
//     sha384), sha256:<hex>;
//   - a version or range in a dependency list ("gtoken": "^5.0.0",
//     google-auth = ">=2.0"), or the opening of a structure
//     ("node_modules/gtoken": {).
//
// Such a span is left alone. Code is recognised only where text carries it
// unquoted: a quoted string is a literal, and a literal under a secret's
// name is a secret. Structured values (a map member named "token") are data,
// never code: only references, placeholders, hashes and versions stay.

// placeholderWords are whole values that stand for a secret someone has to
// fill in. Compared ignoring case, '-' and '_'.
var placeholderWords = []string{
	"changeme", "changeit", "replaceme", "placeholder", "redacted", "removed", "deleted",
	"hidden", "masked", "secret", "password", "token", "apikey", "yourtoken",
	"yourkey", "yourpassword", "yoursecret", "yourapikey", "example", "sample",
	"dummy", "todo", "fixme", "tbd", "none", "null", "nil", "undefined", "empty",
	"notset", "unset", "xxx", "session", "cookie", "cookies", "auth", "credential",
	"credentials", "key", "bearer", "basic", "pass", "passwd", "pw", "read", "write",
	// The example passphrase of XKCD 936, which documentation and tests
	// quote as the example of a strong one.
	"correcthorsebatterystaple",
}

// knownObjects are names whose attributes are configuration lookups, not
// values: password = config.password.
var knownObjects = []string{
	"self", "this", "cls", "os", "process", "env", "environ", "config", "conf", "cfg",
	"settings", "secrets", "vars", "inputs", "steps", "needs", "github", "matrix",
	"params", "props", "options", "opts", "args", "argv", "ctx", "context", "app",
	"request", "req", "res", "response", "values", "session", "credentials",
	"creds", "auth", "data", "form", "body", "keys", "vault", "kwargs", "user",
	"current_user", "client", "import", "window", "document", "flags",
}

// nameBasedRule reports whether r takes a value because of its name, so
// that what it takes may be code, a reference or a placeholder.
func nameBasedRule(r Rule) bool {
	switch r {
	case UnsafeKey, URLCredentials, URLQuerySecret, AuthHeader, CurlAuthUser:
		return true
	}
	t := table()
	return int(r) < len(t.info) && t.info[r].Source == SourceGitleaks
}

// dropBenign removes the spans of name-based rules whose text is not a
// secret (see above).
func dropBenign(s string, sp []span) []span {
	// Token forms with nothing in them first (ghp_xxxx…), then values
	// taken for their name: one that holds another finding is not a
	// reference, it goes whole (and so stays the same when redacted again).
	var drop []int
	gone := func(i int) bool { return len(drop) > 0 && slices.Contains(drop, i) }
	for i, x := range sp {
		if x.rule < numOwn && !nameBasedRule(x.rule) && isPlaceholder(s[x.a:x.b]) {
			drop = append(drop, i)
		}
	}
	for i, x := range sp {
		if nameBasedRule(x.rule) && !overlapsOther(sp, i, gone) && (benignText(s, x.a, x.b) || plainSpan(s, x)) {
			drop = append(drop, i)
		}
	}
	slices.Sort(drop)
	if drop == nil {
		return sp
	}
	out := sp[:0]
	for i, x := range sp {
		if len(drop) > 0 && drop[0] == i {
			drop = drop[1:]
			continue
		}
		out = append(out, x)
	}
	return out
}

// overlapsOther reports whether a token span (not gone) overlaps sp[i].
func overlapsOther(sp []span, i int, gone func(int) bool) bool {
	for k, y := range sp {
		if k != i && y.a < sp[i].b && sp[i].a < y.b && !gone(k) && !nameBasedRule(y.rule) {
			return true
		}
	}
	return false
}

// benignText reports whether s[a:b], a value in free text, is not a secret.
func benignText(s string, a, b int) bool {
	if a >= b {
		return false
	}
	quoted := a > 0 && (s[a-1] == '"' || s[a-1] == '\'' || s[a-1] == '`')
	if hasToken(s[a:b]) {
		return false // a value that holds a token is no reference to one
	}
	// The value as written may go on past the span (a span stops at '}'):
	// a reference must be all of it.
	vb := b
	for vb < len(s) && !isSpace(s[vb]) && strings.IndexByte("\"'`,;&", s[vb]) < 0 {
		vb++ // '&' ends a form or query parameter: token=$TOKEN&project=…
	}
	// A reference inside a string that escapes its line break
	// ("key: ${KEY}\n"), or after an auth scheme ("Bearer ${{ secrets.X }}").
	rb := vb
	for rb-2 >= a && s[rb-2] == '\\' && strings.IndexByte("ntr", s[rb-1]) >= 0 {
		rb -= 2
	}
	ra := a
	if sch := schemeWord(s[a:b]); sch > 0 && sch < rb-a {
		ra += sch
	}
	if isReference(s, ra, rb) || benignValue(s[a:b]) || afterHashTag(s, a) || ansiColor(s[a:b]) {
		return true
	}
	if quoted && (strings.HasPrefix(s[a:], " + ") || strings.HasPrefix(s[a:], " . ")) {
		return true // the literal ends after the name: "PWD=" + realpath(…)
	}
	if quoted {
		return typeUnion(s[a:b]) || strings.Count(s[a:b], "_") >= 1 && envName(s[a:b]) || // "MSI_SECRET": a variable's name
			smallNumber(s[a:b]) && pluralName(s, a) // "secrets": "10", a count
	}
	return isCode(s, a, b) || envName(s[a:vb]) || typeName(s[a:vb]) || secretVariable(s[a:b]) || closedVariable(s[a:b]) || attributeSet(s, a, vb) || goVariable(s, a, vb) || prose(s, a, b) ||
		smallNumber(s[a:vb]) || number(s[a:vb]) && countName(s, a) || literalField(s, a, b)
}

// closedVariable: a snake_case name of two words or more that closes the
// call or literal it is passed in ({"Proxy-Authorization": proxy_auth_value})):
// a variable, code.
func closedVariable(v string) bool {
	name := strings.TrimRight(v, ")]}")
	if name == v || len(name) < 6 || strings.IndexByte(name, '_') < 0 || name[0] == '_' || name[len(name)-1] == '_' {
		return false
	}
	return strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") == "" && !strings.Contains(name, "__")
}

// attributeSet: an object's attribute set to a variable, self._client_key
// = keyfile, this.token = token: code (a password in code is a quoted
// literal).
func attributeSet(s string, a, vb int) bool {
	n, k := valueName(s, a)
	if n == k || k == a || !strings.Contains(s[k:a], "=") || identEnd(s, a) != vb || !isLower(s[a]) || strings.ContainsAny(s[a:vb], "0123456789") {
		return false
	}
	return strings.HasSuffix(s[:n], "self.") || strings.HasSuffix(s[:n], "this.")
}

// ansiColor: the value opens with a terminal colour escape
// (PASS="\x1b[32mPASS"): a label printed in colour.
func ansiColor(v string) bool {
	for _, p := range []string{`\x1b[`, `\033[`, `\e[`, `\u001b[`, "\x1b["} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// goVariable: Go code setting a variable to another: an exported field
// (cfg.Credentials = provider, opt.EncryptionKey = newKey) or a camelCase
// name declared with := (releaseRetryToken := nopRelease), the value an
// identifier of letters. A properties file's key is lower case
// (db.password = …), a Makefile's upper case (TOKEN := …): those go.
func goVariable(s string, a, vb int) bool {
	if identEnd(s, a) != vb || !isLower(s[a]) || strings.ContainsAny(s[a:vb], "0123456789_") {
		return false
	}
	n, k := valueName(s, a)
	if n == k {
		return false
	}
	op := strings.TrimSpace(s[k:a])
	name := s[n:k]
	if op == ":=" {
		return isLower(name[0]) && strings.ToLower(name) != name && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
	}
	return op == "=" && n >= 2 && s[n-1] == '.' && alnumUnder[s[n-2]] && isUpper(name[0]) && strings.ToUpper(name) != name
}

// countWords name what a number counts or bounds.
var countWords = map[string]bool{
	"min": true, "max": true, "revision": true, "version": true, "count": true, "size": true,
	"len": true, "length": true, "limit": true, "timeout": true, "ttl": true, "port": true,
}

// number: digits only, up to ten of them.
func number(v string) bool {
	v = strings.TrimRight(v, ",;)")
	return v != "" && len(v) <= 10 && strings.Trim(v, "0123456789") == ""
}

// countName: the name before the value at a holds a word of countWords
// (DBMS_MIN_REVISION_WITH_INTERSERVER_SECRET = 54441, tokenMaxLength: 4096):
// the number is what it counts, not a PIN (pin_secret = 482913 goes).
func countName(s string, a int) bool {
	n, k := valueName(s, a)
	ws, _ := words(s[n:k])
	for _, w := range ws {
		if countWords[w] {
			return true
		}
	}
	return false
}

// pluralName: the name before the value at a ends in 's' ("secrets":
// "10", tokens = '3'): what a number there counts.
func pluralName(s string, a int) bool {
	_, k := valueName(s, a)
	return k > 0 && (s[k-1] == 's' || s[k-1] == 'S') && k >= 2 && letters[s[k-2]]
}

// valueName: the bounds of the name before the value at a, across the
// operator, quotes and spaces between them.
func valueName(s string, a int) (n, k int) {
	k = a
	for k > 0 && strings.IndexByte(" \t:=\"'`", s[k-1]) >= 0 {
		k--
	}
	n = k
	for n > 0 && alnumUnder[s[n-1]] {
		n--
	}
	return n, k
}

// schemeWord: the length of an HTTP auth scheme and its space at the
// start of v ("Bearer "), or 0.
func schemeWord(v string) int {
	for _, w := range []string{"Bearer ", "bearer ", "Basic ", "Token ", "token "} {
		if strings.HasPrefix(v, w) {
			return len(w)
		}
	}
	return 0
}

// smallNumber: an integer of three digits at most (ApiKey: 0, apiKeySASLAuth
// = 36: an enum or a count; a secret of 1,000 values is none).
func smallNumber(v string) bool {
	v = strings.TrimRight(v, ",;)")
	return v != "" && len(v) <= 3 && strings.Trim(v, "0123456789") == ""
}

// literalField: an identifier (letters only) that ends its line after a
// comma, the field of a composite literal (Credential: cc,), or that is
// the name itself ("htpasswd": htpasswd,).
func literalField(s string, a, b int) bool {
	e := a
	for e < len(s) && (letters[s[e]] || s[e] == '_') {
		e++
	}
	if e == a || e != b {
		return false // the whole value, not the start of one (token123)
	}
	if e+1 <= len(s) && e < len(s) && s[e] == ',' && (e+1 == len(s) || s[e+1] == '\n' || s[e+1] == '\r') {
		return true
	}
	// The name: the identifier before the operator, after its quote.
	k := a
	for k > 0 && strings.IndexByte(" \t:=\"'", s[k-1]) >= 0 {
		k--
	}
	n := k
	for n > 0 && (alnumUnder[s[n-1]]) {
		n--
	}
	return k > n && strings.EqualFold(s[n:k], s[a:e])
}

// prose reports whether the unquoted value s[a:b] after "name:" is the
// first word of a sentence, not a secret: a word of letters (capitalised
// at most, ≤ 16 letters, maybe in parentheses or with a trailing
// apostrophe) that another word follows on the same line, which is not
// the next name of a list of "name: value" pairs. "The debt outlives the
// session: it is kept", "fencing token: the sequence of …", ":param
// auth: (optional) Auth tuple". A password of one lower-case word before
// more words ("password: letmein now") is given up for it; one with a
// digit, a symbol or inner capitals is not.
func prose(s string, a, b int) bool {
	k := a
	for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
		k--
	}
	if k == a || k == 0 || s[k-1] != ':' {
		return false
	}
	// The span may run over the whole rest of a quoted line ("auth:
	// token expired" in an error message): its first word is the value.
	if sp := strings.IndexByte(s[a:b], ' '); sp > 0 {
		b = a + sp
	}
	e := b
	if e < len(s) && s[e] == '\'' {
		e++ // gitleaks' sample lines: the span stops at the quote
	}
	w := s[a:b]
	if formatVerb(w) {
		w = "x" // "credentials: %q missing …": a verb, then words
	}
	if len(w) > 1 && w[0] == '(' && e < len(s) && s[e] == ')' {
		w = w[1:] // "(optional)": the span stops at ')'
		e++
	}
	if w == "" || len(w) > 16 {
		return false
	}
	if len(w) <= 4 && strings.Trim(w, "0123456789") == "" {
		// "apiPassword: 8 bytes": a length, not a PIN, when a unit follows.
		return e+1 < len(s) && s[e] == ' ' && unitWord(s[e+1:])
	}
	// A message that opens a string literal ("credentials: HTTP request
	// …", "credentials: `command` field …", Go's "pkg: message" errors) may
	// start with an acronym (its digits too: "idtoken: ES256 signature …")
	// or a quoted word; elsewhere the word is plain.
	// Mixed case stays suspect everywhere ("password: HunterTwo was …").
	literal := messageStart(s, k-1)
	if literal {
		w = strings.Trim(w, "`\"'\\")
	}
	if w == "" {
		return false
	}
	acronym := literal && len(w) <= 6 && strings.ToUpper(w) == w
	for i := 0; i < len(w); i++ {
		if !(letters[w[i]] || acronym && i > 0 && isDigit(w[i])) || (i > 0 && isUpper(w[i]) && !acronym) {
			return false
		}
	}
	if e+1 >= len(s) || s[e] != ' ' {
		return false
	}
	next := s[e+1:]
	n := 0
	for n < len(next) && !isSpace(next[n]) {
		n++
	}
	word := next[:n]
	if literal {
		word = strings.TrimLeft(word, "`\"'\\")
	}
	if word == "" || !(letters[word[0]] || formatVerb(word)) || strings.HasSuffix(word, ":") || strings.Contains(word, "=") {
		return false
	}
	return true
}

// messageStart: the name ending at the ':' at c opens a string literal
// ("auth: …", `auth: …`), as Go's error messages start with their package.
func messageStart(s string, c int) bool {
	n := c
	for n > 0 && alnumUnder[s[n-1]] {
		n--
	}
	return n < c && n > 0 && (s[n-1] == '"' || s[n-1] == '`')
}

// unitWord: s starts with a unit of size or time, as a word.
func unitWord(s string) bool {
	for _, u := range []string{"bytes", "byte", "characters", "chars", "digits", "letters", "bits", "seconds", "minutes", "hours", "days"} {
		if strings.HasPrefix(s, u) && (len(s) == len(u) || !letters[s[len(u)]]) {
			return true
		}
	}
	return false
}

// formatVerb: a printf verb (%s, %v, %d, %-8q), possibly followed by
// punctuation: a value a format string will fill in.
func formatVerb(v string) bool {
	v = strings.TrimRight(v, ",.;)")
	if len(v) < 2 || v[0] != '%' {
		return false
	}
	i := 1
	for i < len(v) && strings.IndexByte("-+# 0", v[i]) >= 0 {
		i++
	}
	for i < len(v) && (isDigit(v[i]) || v[i] == '.') {
		i++
	}
	return i == len(v)-1 && letters[v[i]]
}

// secretVariable: an unquoted value that is itself a secret's name,
// written as a variable (oldAuth, fake_token, githubToken): code passing
// a secret on, not the secret.
func secretVariable(v string) bool {
	if len(v) < 4 || !isLower(v[0]) || !unsafeName(v) || !wordy(v) {
		return false
	}
	sep := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '_' && i+1 < len(v) && isLower(v[i+1]):
			sep = true
		case isUpper(c) && i > 0 && isLower(v[i-1]):
			sep = true
		case !isLower(c) && !isDigit(c) && !isUpper(c) && c != '_':
			return false
		}
	}
	return sep
}

// typeUnion: a quoted type annotation, "AuthTypes | None".
func typeUnion(v string) bool {
	parts := strings.Split(v, " | ")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		switch p {
		case "None", "null", "undefined", "nil":
			continue
		}
		if !typeName(p) {
			return false
		}
	}
	return true
}

// pathValue: a file path (/var/run/secrets/…/token, ./certs/key.pem):
// where a secret is kept, not the secret. Its parts are lower-case names.
func pathValue(v string) bool {
	rest, ok := strings.CutPrefix(v, "/")
	if !ok {
		for _, p := range []string{"./", "../", "~/"} {
			if r, ok2 := strings.CutPrefix(v, p); ok2 {
				rest, ok = r, true
				break
			}
		}
	}
	if !ok || !strings.Contains(rest, "/") {
		return false
	}
	for _, part := range strings.Split(rest, "/") {
		if part == "" || len(part) > 64 {
			return false
		}
		for i := 0; i < len(part); i++ {
			if c := part[i]; !isLower(c) && !isDigit(c) && c != '.' && c != '-' && c != '_' {
				return false
			}
		}
		if !wordy(part) {
			return false
		}
	}
	return true
}

// typeName: a Python or TypeScript annotation names a type, not a value
// (auth: AuthTypes, cookies: RequestsCookieJar, password: bytes).
func typeName(v string) bool {
	v = strings.TrimRight(v, ",)")
	if k := strings.LastIndexByte(v, '.'); k >= 0 && k+1 < len(v) {
		mod := v[:k]
		if _, e := identChain(mod, 0); e != len(mod) {
			return false
		}
		v = v[k+1:] // _t.AuthType: a type from a module
	}
	switch v {
	case "str", "bytes", "int", "bool", "float", "dict", "list", "tuple", "Any", "object", "string", "number", "boolean", "unknown", "any":
		return true
	}
	if v == "" || !isUpper(v[0]) || !wordy(v) {
		return false
	}
	for _, suf := range []string{"Types", "Type", "Jar", "Dict", "Callable", "Protocol", "Class", "Like"} {
		if strings.HasSuffix(v, suf) && len(v) > len(suf) {
			for i := 0; i < len(v); i++ {
				if !letters[v[i]] {
					return false
				}
			}
			return true
		}
	}
	return false
}

// envName: an environment variable's name (MAVEN_GPG_PASSPHRASE), as a
// workflow passes it to a step that reads the variable.
func envName(v string) bool {
	if len(v) < 3 || len(v) > 64 || !isUpper(v[0]) || strings.IndexByte(v, '_') < 0 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isUpper(v[i]) && !isDigit(v[i]) && v[i] != '_' {
			return false
		}
	}
	return true
}

// hasToken reports whether v holds a token art's own or provider rules
// find by its form.
func hasToken(v string) bool {
	for _, x := range findSecrets(v, nil) {
		if !nameBasedRule(x.rule) && !isPlaceholder(v[x.a:x.b]) {
			return true
		}
	}
	return len(providerSpans(v, nil)) > 0
}

// benignMember reports whether v, the value of a secret-named member or
// argv item, is left alone: benign, and with nothing in it that redaction
// would remove (so that the output redacts to itself).
func (w *walker) benignMember(v string) bool {
	if !BenignValue(v) {
		return false
	}
	var sum Summary
	return w.scan(v, &sum) == v
}

// BenignValue reports whether a whole value (a map member, an argv item
// after a secret flag) is a reference, a placeholder, an integrity hash or
// a version: not a secret, whatever its name.
func BenignValue(v string) bool {
	return v != "" && (isReference(v, 0, len(v)) || benignValue(v))
}

// benignValue: placeholders, hashes, versions and structure openings.
func benignValue(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	return isPlaceholder(v) || isIntegrity(v) || isVersion(v) || punctOnly(v) || isFlag(v) || pathValue(v) ||
		(len(v) > 1 && (v[0] == '{' || v[0] == '[') && (v[1] == '\n' || v[1] == ' ' || v[1] == '"'))
}

// isFlag: "--die-with-parent" after "--new-session" is the next flag.
func isFlag(v string) bool {
	return len(v) > 3 && strings.HasPrefix(v, "--") && letters[v[2]] && nameLike(v[2:])
}

// punctOnly: ")", "{", "[", "});": the rest of a line of code, not a value.
func punctOnly(v string) bool {
	if len(v) > 3 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if strings.IndexByte("()[]{};,", v[i]) < 0 {
			return false
		}
	}
	return true
}

// afterHashTag: the span follows "h1:" or "sha512-" (gitleaks' generic
// rule takes the hash of a go.sum line after a module path naming auth).
func afterHashTag(s string, a int) bool {
	for _, tag := range []string{"h1:", "sha1-", "sha256-", "sha384-", "sha512-", "sha256:"} {
		if a >= len(tag) && s[a-len(tag):a] == tag {
			return isIntegrity(tag + hashRun(s[a:]))
		}
	}
	return false
}

func hashRun(s string) string {
	i := 0
	for i < len(s) && (alnum[s[i]] || s[i] == '+' || s[i] == '/' || s[i] == '=') {
		i++
	}
	return s[:i]
}

// isReference: s[a:] starts with a template or variable reference that
// covers s[a:b], possibly followed by more references.
func isReference(s string, a, b int) bool {
	for a < b {
		e := refEnd(s, a)
		if e <= a {
			return false
		}
		a = e
		// "${A}/${B}", "${A}:${B}": separators between references.
		for a < b && strings.IndexByte("/:.-_@ ", s[a]) >= 0 && refEnd(s, a+1) > a+1 {
			a++
		}
	}
	return true
}

// refEnd returns the end of the reference starting at i, or 0.
func refEnd(s string, i int) int {
	rest := s[i:]
	closeAt := func(open, close string) int {
		if !strings.HasPrefix(rest, open) {
			return 0
		}
		k := strings.Index(rest[len(open):], close)
		if k < 0 || k > 400 || strings.IndexByte(rest[len(open):len(open)+k], '\n') >= 0 {
			return 0
		}
		return i + len(open) + k + len(close)
	}
	for _, p := range [][2]string{{"${{", "}}"}, {"{{", "}}"}, {"${", "}"}, {"$(", ")"}, {"%{", "}"}, {"#{", "}"}, {"<%=", "%>"}, {"<%", "%>"}, {"%(", ")s"}, {"$env:", ""}} {
		if p[1] == "" {
			continue
		}
		if e := closeAt(p[0], p[1]); e > 0 {
			return e
		}
	}
	switch {
	case strings.HasPrefix(rest, "$env:"):
		return identEnd(s, i+5)
	case len(rest) > 1 && rest[0] == '$' && (letters[rest[1]] || rest[1] == '_'):
		return identEnd(s, i+1) // $VAR
	case len(rest) > 2 && rest[0] == '%' && (letters[rest[1]] || rest[1] == '_'):
		if e := identEnd(s, i+1); e < len(s) && s[e] == '%' {
			return e + 1 // %VAR%
		}
	case len(rest) > 2 && rest[0] == '{' && (letters[rest[1]] || rest[1] == '_'):
		if e := identEnd(s, i+1); e < len(s) && s[e] == '}' {
			return e + 1 // {name}
		}
	case len(rest) > 1 && rest[0] == '{':
		if e := runOf(s, i+1, digitClass); e < len(s) && s[e] == '}' && e-i <= 3 {
			return e + 1 // {}, {0}: Python's positional format fields
		}
	case len(rest) > 1 && rest[0] == '!' && isUpper(rest[1]):
		// CloudFormation: !Ref Name, !Sub '…', !GetAtt A.B
		e := identEnd(s, i+1)
		switch s[i+1 : e] {
		case "Ref", "Sub", "GetAtt", "ImportValue", "FindInMap", "Select", "Join", "If", "Base64":
			return len(s) // the rest is the function's argument
		}
	}
	return 0
}

// identEnd is the end of the identifier at i.
func identEnd(s string, i int) int {
	for i < len(s) && (alnumUnder[s[i]]) {
		i++
	}
	return i
}

// isPlaceholder: :name, <name>, YOUR_…, xxxx…, ****, and placeholderWords.
func isPlaceholder(v string) bool {
	v = strings.Trim(v, `"'`+"`")
	if v == "" {
		return false
	}
	switch {
	case v[0] == ':' && len(v) > 1 && letters[v[1]] && nameLike(v[1:]) && wordy(v[1:]):
		return true // ?circle-token=:circle-token
	case v[0] == '<' && v[len(v)-1] == '>' && len(v) > 2 && nameLike(strings.Trim(v[1:len(v)-1], " ")):
		return true
	case len(v) >= 5 && strings.EqualFold(v[:5], "your_"), len(v) >= 5 && strings.EqualFold(v[:5], "your-"), len(v) >= 5 && strings.EqualFold(v[:5], "your "):
		return true
	}
	if placeholderWord(v) || formatVerb(v) || v == "{}" || elided(v) {
		return true
	}
	// xxxx…, ****, ……: nothing but mask characters (a prefix aside:
	// sk-xxxxxxxx).
	body := v
	if k := strings.LastIndexAny(body, "-_."); k >= 0 && k < len(body)-1 && len(body)-k > 4 {
		body = body[k+1:]
	}
	n := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case 'x', 'X', '*', '.', '#':
			n++
		default:
			return false
		}
	}
	return n >= 3
}

// elided: an example cut short with an ellipsis ("…", `:xoxb-…`,
// `sk-ant-…`), holding too little to be a secret: 8 letters and digits at
// most.
func elided(v string) bool {
	if !strings.Contains(v, "…") && !strings.Contains(v, "....") {
		return false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		if alnum[v[i]] {
			n++
		}
	}
	return n <= 8
}

// placeholderWord: v is one of placeholderWords (ignoring case, '-', '_'
// and a trailing "here": your_token_here).
func placeholderWord(v string) bool {
	if len(v) > 32 {
		return false
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '-' || c == '_' || c == ' ':
			continue
		case isUpper(c):
			c += 'a' - 'A'
		case !isLower(c):
			return false
		}
		b.WriteByte(c)
	}
	w := strings.TrimSuffix(b.String(), "here")
	for _, p := range placeholderWords {
		if w == p {
			return true
		}
	}
	return false
}

// nameLike: letters, digits, '_', '-', '.', ' ' only.
func nameLike(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !ident[v[i]] && v[i] != ' ' {
			return false
		}
	}
	return true
}

// isIntegrity: go.sum and lockfile integrity hashes, digests.
func isIntegrity(v string) bool {
	v = strings.Trim(v, `"'`)
	b64 := func(s string, n int) bool {
		s = strings.TrimRight(s, "=")
		if len(s) < n {
			return false
		}
		for i := 0; i < len(s); i++ {
			if !alnum[s[i]] && s[i] != '+' && s[i] != '/' {
				return false
			}
		}
		return true
	}
	switch {
	case strings.HasPrefix(v, "h1:"):
		return len(v) == 47 && b64(v[3:], 43)
	case strings.HasPrefix(v, "sha512-"):
		return b64(v[7:], 86)
	case strings.HasPrefix(v, "sha384-"):
		return b64(v[7:], 64)
	case strings.HasPrefix(v, "sha256-"):
		return b64(v[7:], 43)
	case strings.HasPrefix(v, "sha1-"):
		return b64(v[5:], 27)
	case strings.HasPrefix(v, "sha256:"):
		h := v[7:]
		return len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
	}
	return false
}

// isVersion: a version or a range of versions, as dependency lists write
// them: 1.2.3, v2, ^5.0.0, ~1.2, >=2.0,<3, 1.x, *, latest, workspace:*,
// npm:pkg@^1.0.0.
func isVersion(v string) bool {
	v = strings.Trim(v, `"'`)
	switch v {
	case "*", "latest", "next", "stable", "beta", "canary", "workspace:*", "workspace:^", "workspace:~":
		return true
	}
	if k := strings.LastIndexByte(v, '@'); strings.HasPrefix(v, "npm:") && k > 4 {
		v = v[k+1:]
	}
	v = strings.TrimPrefix(v, "workspace:")
	if v == "" {
		return false
	}
	// Ranges: parts separated by spaces, ',', '||', ' - '.
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == '|' }) {
		if part == "-" {
			continue
		}
		if !versionPart(part) {
			return false
		}
	}
	return true
}

func versionPart(p string) bool {
	bare := p
	p = strings.TrimLeft(p, "^~<>=!")
	ranged := len(p) < len(bare)
	p = strings.TrimPrefix(p, "v")
	if p == "" || !isDigit(p[0]) {
		return false
	}
	// Numbers separated by dots (x and * as wildcards), then an optional
	// -prerelease or +build of letters, digits and dots.
	i, dots := 0, 0
	for i < len(p) && (isDigit(p[i]) || p[i] == '.' || p[i] == 'x' || p[i] == '*') {
		if p[i] == '.' {
			dots++
		}
		i++
	}
	if i == len(p) {
		// A bare number is no version: a PIN or an id is a secret's value.
		return dots <= 3 && (dots >= 1 || ranged)
	}
	if (p[i] != '-' && p[i] != '+') || len(p)-i > 32 {
		return false // v1.0-<170 hex> is a Cloudflare key, not a version
	}
	for _, c := range []byte(p[i+1:]) {
		if !alnum[c] && c != '.' && c != '-' && c != '+' {
			return false
		}
	}
	return dots >= 1 && dots <= 3
}

// isCode reports whether the unquoted value at s[a:] is code: a call, an
// index, an attribute of a known object or a chain of three, an operator
// expression, or a keyword.
func isCode(s string, a, b int) bool {
	if strings.HasPrefix(s[a:], "(*") {
		return true // a Go conversion: (*AzureCLICredential)(nil)
	}
	for _, kw := range []string{"new ", "await ", "lambda", "function(", "function (", "fn(", "func(", "()", "None", "nil", "null", "undefined", "true", "false", "True", "False", "range ", "make(", "map[", "[]"} {
		if strings.HasPrefix(s[a:], kw) && (a+len(kw) >= len(s) || !alnumUnder[s[a+len(kw)]] || !alnumUnder[kw[len(kw)-1]]) {
			return true
		}
	}
	addr := s[a] == '&' || s[a] == '*'
	if addr || s[a] == '(' {
		a++ // Go and C: &syscall.Credential{…}, *cfg.Token; a tuple (f(x), …)
	}
	segs, e := identChain(s, a)
	if len(segs) == 0 {
		return false
	}
	for _, g := range segs {
		if !wordy(g) {
			return false
		}
	}
	k := e
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k < len(s) && (s[k] == '(' || (s[k] == '[' && !startsWithMarker(s[k:]))) {
		return true // a call or an index: getpass.getpass(…), os.environ["X"]
	}
	if k < len(s) && s[k] == '{' && (len(segs) >= 2 || addr) {
		return true // a composite literal: &syscall.Credential{…}
	}
	if k < len(s) && strings.HasPrefix(s[k:], "{}") {
		return true // an empty composite literal: idToken2{}
	}
	if addr && len(segs) == 1 && e < len(s) && (s[e] == ',' || s[e] == ')') && strings.Trim(s[e:b], ",;)") == "" {
		return true // a pointer passed on: BearerToken: *token,
	}
	if e < b && strings.Trim(s[e:b], ")]}") != "" {
		return false // more value after the chain (closing brackets aside): not a plain reference
	}
	if len(segs) >= 3 || (len(segs) == 2 && (knownObject(segs[0]) || receiver(segs[0]) || isLower(segs[0][0]) && isUpper(segs[1][0]))) {
		return true // an attribute: config.api_key, self.token, resp.RefreshToken
	}

	// An operator expression: a + b, x or "", a ?? b, cond ? a : b.
	if k > e && k < len(s) {
		// "| " and "= " after a type: password: bytes | str = None.
		for _, op := range []string{"+ ", "- ", "* ", "/ ", "% ", "|| ", "&& ", "?? ", "? ", "or ", "and ", "if ", "|> ", "| ", "= "} {
			if strings.HasPrefix(s[k:], op) {
				return true
			}
		}
	}
	return false
}

// identChain parses identifiers joined by '.' (or "->", "::") at i; it
// returns them and the end of the chain.
func identChain(s string, i int) ([]string, int) {
	var segs []string
	for {
		if i >= len(s) || !(letters[s[i]] || s[i] == '_' || s[i] == '$') {
			return segs, i
		}
		e := i + 1
		for e < len(s) && (alnumUnder[s[e]] || s[e] == '$') {
			e++
		}
		segs = append(segs, s[i:e])
		switch {
		case e < len(s) && s[e] == '.' && e+1 < len(s) && (letters[s[e+1]] || s[e+1] == '_'):
			i = e + 1
		case strings.HasPrefix(s[e:], "->") || strings.HasPrefix(s[e:], "::"):
			i = e + 2
		default:
			return segs, e
		}
	}
}

// receiver: a Go method receiver or a short local (c.APIKey, s.value).
func receiver(seg string) bool {
	seg = strings.TrimPrefix(seg, "_")
	if seg == "" || len(seg) > 3 {
		return false
	}
	for i := 0; i < len(seg); i++ {
		if !isLower(seg[i]) {
			return false
		}
	}
	return true
}

func knownObject(seg string) bool {
	l := strings.ToLower(strings.TrimLeft(seg, "$_"))
	for _, o := range knownObjects {
		if l == o {
			return true
		}
	}
	return false
}

// wordy: an identifier a person wrote (getpass, GITHUB_TOKEN, apiKey,
// XMLHttpRequest), not a random string (aB3xK9pQ): few digits and few
// camelCase humps.
func wordy(seg string) bool {
	if len(seg) > 48 {
		return false
	}
	digits, changes := 0, 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if isDigit(c) {
			digits++
		}
		if i > 0 && isUpper(c) && isLower(seg[i-1]) {
			changes++ // a camelCase hump
		}
	}
	return digits <= 2 && changes <= len(seg)/5+1
}
