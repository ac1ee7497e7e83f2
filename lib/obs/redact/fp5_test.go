package redact

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// fromClasses: a string of the pattern's length whose i-th byte is drawn
// (from fixture bytes) from the class the pattern names there: 'U' upper
// case, 'l' lower case, 'd' digit, 'h' and 'H' hex letters of each case.
func fromClasses(seed, pattern string) string {
	b := fixtureBytes(seed, len(pattern))
	out := make([]byte, len(pattern))
	for i := range pattern {
		var alphabet string
		switch pattern[i] {
		case 'U':
			alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		case 'l':
			alphabet = "abcdefghijklmnopqrstuvwxyz"
		case 'd':
			alphabet = "0123456789"
		case 'h':
			alphabet = "abcdef"
		case 'H':
			alphabet = "ABCDEF"
		}
		out[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(out)
}

// b64Line: n characters of base64 of fixture bytes, '+' and '/' written as
// letters (one token, as a line of a block without them is).
func b64Line(seed string, n int) string {
	s := base64.StdEncoding.EncodeToString(fixtureBytes(seed, n))[:n]
	return strings.NewReplacer("+", "Q", "/", "z").Replace(s)
}

// The classes of the real-text and source-code sets this round found no
// secret in, each written from its shape, and beside each a secret in the
// same place that must still go.
func TestRound5Stays(t *testing.T) {
	r := New(Options{})
	tok := func(seed string, n int) string {
		return base64.RawURLEncoding.EncodeToString(fixtureBytes(seed, n))[:n]
	}
	for _, c := range []struct {
		class    string
		stays    string
		goes     string // "" when the class has no secret form
		goesPart string // what must not survive in goes
	}{
		{"ABNF repetition in a comment",
			"//   passwd    = 1*SAFE ; MUST accept up to 255 octets",
			"//   passwd    = 1*S4fe!x9q ; MUST accept", "S4fe!x9q"},
		{"a number under a counting name",
			"\tDBMS_MIN_REVISION_WITH_INTERSERVER_SECRET                   = 54441",
			"\tINTERSERVER_SECRET = 54441", "54441"},
		{"an error message opening with an algorithm's name",
			`		return fmt.Errorf("idtoken: ES256 signature not valid")`,
			`		return fmt.Errorf("idtoken: Es256x9Q signature not valid")`, "Es256x9Q"},
		{"a provider prefix inside a snake_case name",
			`const _ErrorLowerName = "unknown_typetoo_few_live_replicas_for_quorum_of_previous_write_2xx"`,
			`token live_` + tok("gc", 40), tok("gc", 40)},
		{"a provider prefix inside a line of base64",
			"+" + b64Line("pre", 14) + "+YC" + b64Line("yc", 44) + "+" + b64Line("post", 8),
			"key YC" + b64Line("yc", 44), b64Line("yc", 44)},
		{"a placeholder query in a percent-encoded URL",
			`u"http+unix://%2Fvar%2Frun%2Fsocket/path?key=value",`,
			`u"http+unix://%2Fvar%2Frun%2Fsocket/path?key=` + tok("pk", 24) + `",`, tok("pk", 24)},
		{"a variable that closes its call",
			`session.headers.update({"Proxy-Authorization": proxy_auth_value})`,
			`session.headers.update({"Proxy-Authorization": "Basic ` + base64.StdEncoding.EncodeToString([]byte("user:"+tok("bp", 12))) + `"})`,
			base64.StdEncoding.EncodeToString([]byte("user:" + tok("bp", 12)))},
		{"Digest parameters without the response",
			`expected = (b'Authorization: Digest username="user", '`,
			`Authorization: Digest username="user", response="` + hex.EncodeToString(fixtureBytes("dr", 16)) + `"`,
			hex.EncodeToString(fixtureBytes("dr", 16))},
		{"a Basic credential with an empty password",
			`assert headers == {'Proxy-Authorization': 'Basic dXNlcjo='}`,
			`assert headers == {'Proxy-Authorization': 'Basic dXNlcjpwYXNz'}`, "dXNlcjpwYXNz"},
		{"a certificate's body whose BEGIN the draft cut off",
			"-" + b64Line("cert1", 64) + "\n-" + b64Line("cert3", 44) + "==\n------END CERTIFICATE-----\n-\n",
			"token:\n" + b64Line("cert1", 64) + "\nnext: value\n", b64Line("cert1", 64)},
		{"a line of PEM's width after a hunk header, the padded last line after it",
			"@@ -2277,9 +2103,9 @@ " + b64Line("hunk", 64) + "\n " + b64Line("last", 54) + "==\n",
			"@@ -2277,9 +2103,9 @@ " + b64Line("hunk", 64) + "\n func f() {}\n", b64Line("hunk", 64)},
		{"a line of PEM's width after a hunk header, an unpadded last line after it",
			"@@ -1643,42 +1614,6 @@ " + b64Line("hunk2", 64) + "\n " + b64Line("l2", 20) + "+" + b64Line("l3", 35) + "\n",
			"@@ -1643,42 +1614,6 @@ " + b64Line("hunk2", 64) + "\n more text\n", b64Line("hunk2", 64)},
		{"a header's name alone in a literal",
			`        assert b'Authorization:' not in request_content`,
			`        sent = b'Authorization: Bearer ` + tok("ah", 24) + `'`, tok("ah", 24)},
		{"positional format fields as userinfo",
			`        url = 'http://{0}:{1}@{2}:9000/path?query#frag'.format(`,
			`        url = 'http://{0}:` + tok("fu", 20) + `@{2}:9000/path'.format(`, tok("fu", 20)},
		{"a value that counts up",
			`      # '{"cookies": {"sessioncookie": "123456789"}}'`,
			`      # '{"cookies": {"sessioncookie": "` + tok("sc", 20) + `"}}'`, tok("sc", 20)},
		{"a cookie whose value is plain",
			`            params={"Set-Cookie": "foo=deleted; expires=Thu, 01-Jan-1970 00:00:01 GMT"},`,
			`    >>> headers.add('Set-Cookie', 'sid=` + tok("ck", 20) + `; Path=/')`, tok("ck", 20)},
		{"an attribute set to a variable",
			`        self._client_key = keyfile`,
			`        self._client_key = "` + tok("sk", 20) + `"`, tok("sk", 20)},
		{"a dotted name with long parts",
			"\tCommandDeletePrivateVerificationToken            = \"Storage.deletePrivateVerificationToken\"",
			"\tCommandDeletePrivateVerificationToken            = \"Storage.d3l" + tok("dn", 20) + "\"", tok("dn", 20)},
		{"a secret's name and its operator",
			`	const credential = "Credential="`,
			`	const credential = "Credential=` + tok("co", 16) + `"`, tok("co", 16)},
		{"an attribute that closes its call",
			`                                   {"Proxy-Authorization": self.proxy_auth})`,
			`                                   {"Proxy-Authorization": "Bearer ` + tok("pa", 24) + `"})`, tok("pa", 24)},
		{"a shell expansion before ':'",
			`      --volume=$PWD:/chromedp \`,
			`      --password=` + tok("sv", 16) + ` \`, tok("sv", 16)},
		{"an elided example",
			`//	    "SecretAccessKey" : "/7PC5om....",`,
			`//	    "SecretAccessKey" : "/7PC5om` + tok("el", 30) + `",`, tok("el", 30)},
		{"a label in a terminal colour",
			`PASS="\x1b[32mPASS"`,
			`PASS="` + tok("an", 16) + `"`, tok("an", 16)},
		{"a reference before the next form parameter",
			`  wget https://scan.example.com/dl --post-data "token=$SCAN_TOKEN&project=$SCAN_PROJECT" -O tool.tgz`,
			`  wget https://scan.example.com/dl --post-data "token=` + tok("fp", 20) + `&project=$SCAN_PROJECT" -O tool.tgz`, tok("fp", 20)},
		{"Go: an exported field set to a variable",
			`	cfg.Credentials = provider`,
			`	db.password = provider`, "provider"},
		{"no name before the operator",
			"\t) := nopRelease\n\tx() = provider",
			"", ""},
		{"Go: a camelCase variable declared from another",
			`	releaseRetryToken := nopRelease`,
			`	RELEASE_TOKEN := nopRelease`, "nopRelease"},
	} {
		var sum Summary
		if out := r.Text(c.stays, &sum); out != c.stays {
			t.Errorf("%s: %q\n   became %q", c.class, c.stays, out)
		}
		if out := r.Text(c.goes, &sum); c.goesPart != "" && strings.Contains(out, c.goesPart) {
			t.Errorf("%s: the secret %q survived: %q", c.class, c.goesPart, out)
		}
	}
}

// The shapes this round takes bare, drawn from their alphabets, and the
// neighbours that stay: names, hashes, ids, addresses.
func TestRound5Shapes(t *testing.T) {
	r := New(Options{})
	sumo := "su" + fromClasses("sumo", "UlUdlllUUllU") // one run of digits: random-token's tests need three
	d := func(seed string, n int) string { return fromClasses(seed, strings.Repeat("d", n)) }
	// Half its letter pairs common (wh, ti, be, ec), digits all along.
	digitsAlong := "iwh" + d("a", 2) + "p" + d("b", 4) + "gytik" + d("c", 1) + "d" + d("d", 1) + "s" + d("e", 1) + "bec" + d("f", 1)
	mixedHex := fromClasses("mixed", "dhdHHhddhHdddHhdHhHddhdhHdHdHHdHddhHhdH")
	sk := func(seed string) string { return fromClasses(seed, "dhddhdhd") }
	for _, c := range []struct {
		name, in string
		goes     bool
	}{
		{"Sumo Logic access id", sumo, true},
		{"Sumo Logic access id in a config", "accessId: " + sumo + "\n", true},
		{"Sumo Logic access id as a URL's user", "https://" + sumo + "@api.example.com/", true},
		{"a random token as a URL's user", "https://" + fromClasses("url", "lldllldlllldlld") + "@git.example.com/org/repo.git", true},
		{"a login as a URL's user", "https://deploy-bot@git.example.com/org/repo.git", false},
		{"camelCase name", "superMan1Loves", false},
		{"camelCase name, acronym", "subXMLParser2x", false},
		{"word", "subscriptions1", false},
		{"Sidekiq credential", sk("a") + ":" + sk("b"), true},
		{"Sidekiq credential in an env line", "BUNDLE_ENTERPRISE__CONTRIBSYS__COM=" + sk("c") + ":" + sk("d"), true},
		{"hex words", "cafebabe:deadbeef", false},
		{"a chain of hex groups", "fe80:0000:" + sk("e") + ":" + sk("f"), false},
		{"hex pair inside a path", "/x/" + sk("g") + ":" + sk("h") + "/y", false},
		{"Mailgun key", hex.EncodeToString(fixtureBytes("mg", 16)) + "-" + sk("i") + "-" + sk("j"), true},
		{"UUID", "3a16750d-d363-41a4-8ebd-035408f7730f", false},
		{"hex of both cases", mixedHex, true},
		{"git hash", hex.EncodeToString(fixtureBytes("sha", 20)), false},
		{"upper-case hex", strings.ToUpper(hex.EncodeToString(fixtureBytes("sha", 20))), false},
		{"digits all along, half the letter pairs common", digitsAlong, true},
		{"camelCase name with a number", "readBatch100kFromTheRing", false},
		{"both cases, dense, one capital pair", fromClasses("dense", "lUlUlUllllUldUllUlUUlUlU"), true},
		{"CamelCase words", "TheQuickBrownFoxJumpsOverTheLazyDog", false},
	} {
		var sum Summary
		out := r.Text(c.in, &sum)
		if gone := out != c.in; gone != c.goes {
			t.Errorf("%s: %q became %q (want redacted: %v)", c.name, c.in, out, c.goes)
		}
	}
}
