package redact

import (
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"
)

// fixtureBytes: n bytes that look random, the same on every run.
func fixtureBytes(seed string, n int) []byte {
	var out []byte
	for i := 0; len(out) < n; i++ {
		h := sha256.Sum256([]byte(seed + string(rune('a'+i))))
		out = append(out, h[:]...)
	}
	return out[:n]
}

// base58Check: a Bitcoin address of the version byte and payload.
func base58Check(version byte, payload []byte) string {
	b := append([]byte{version}, payload...)
	h := sha256.Sum256(b)
	h = sha256.Sum256(h[:])
	b = append(b, h[:4]...)
	n := new(big.Int).SetBytes(b)
	var out []byte
	for n.Sign() > 0 {
		m := new(big.Int)
		n.DivMod(n, big.NewInt(58), m)
		out = append([]byte{base58[m.Int64()]}, out...)
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append([]byte{'1'}, out...)
	}
	return string(out)
}

// badChecksum changes the last character of a Base58Check string.
func badChecksum(s string) string {
	c := byte('x')
	if s[len(s)-1] == 'x' {
		c = 'y'
	}
	return s[:len(s)-1] + string(c)
}

// uuid4B64: a version-4 UUID written in 22 characters of base64url.
func uuid4B64(seed string) string {
	u := fixtureBytes(seed, 16)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return base64.RawURLEncoding.EncodeToString(u)
}

// The classes of the wider real-text set that were no secrets: encoded
// images cut short by the draft, ids written in base64, XMP's packet id,
// and values under secret names whose shape is a count, a path of words,
// a reference or a pointer. Each written from its shape.
func TestWiderRealTextStays(t *testing.T) {
	r := New(Options{})
	blockLine := base64.StdEncoding.EncodeToString(fixtureBytes("line", 57)) // 76 characters
	tail := base64.StdEncoding.EncodeToString(fixtureBytes("tail", 22))      // padded
	for class, texts := range map[string][]string{
		"data: URI payload, wrapped": {
			`+   xlink:href="data:image/png;base64,` + base64.RawURLEncoding.EncodeToString(fixtureBytes("png", 60)) + "\n+" + blockLine,
			`<img src="data:image/webp;base64,` + base64.RawURLEncoding.EncodeToString(fixtureBytes("webp", 30)),
		},
		"data: URI payload, the line after it": {
			`<image width="9" xlink:href="data:image/png;base64,` + base64.StdEncoding.EncodeToString(fixtureBytes("first", 45)) + "\n" +
				base64.RawURLEncoding.EncodeToString(fixtureBytes("second", 57)),
		},
		"end of a PNG in base64": {
			base64.StdEncoding.EncodeToString(append(fixtureBytes("png-body", 13), []byte("\x00\x00\x00\x00IEND\xaeB`\x82")...)) + `" transform="scale(2)">`,
			base64.StdEncoding.EncodeToString(append(fixtureBytes("png-body", 14), []byte("\x00\x00\x00\x00IEND\xaeB`\x82")...)) + `"/>`,
			base64.StdEncoding.EncodeToString(append(fixtureBytes("png-body", 15), []byte("\x00\x00\x00\x00IEND\xaeB`\x82")...)) + `"/>`,
		},
		"string concatenation after the name": {
			"\twant := \"HOME=/home/op\\nPWD=\" + realpath(t, dir) + \"\\n\"",
		},
		"tuple of names, link, symbols": {
			"        auth = (user_name, pass_word)",
			".. _Provider: https://auth.example.org/docs/",
			`    USER = PASSWORD = "%!*'();:@&=+$,/?#[] "`,
		},
		"Bitcoin address": {
			`<p>BTC: <code>` + base58Check(0, fixtureBytes("btc", 20)) + `</code></p>`,
			`donate: ` + base58Check(5, fixtureBytes("p2sh", 20)),
		},
		"last line of a wrapped block": {
			"-" + blockLine + "\n-" + blockLine + "\n-" + tail + `" transform="matrix(1 0 0 1 3 4)">` + "\r\n-</image>",
			blockLine + "\n" + tail + `"/>`,
		},
		"UUID in base64": {
			"[2020-01-02 10:00:00,001][INFO ][cluster.service] added {[Nova][" + uuid4B64("n1") + "][es-data-x1][inet[/10.0.0.4:9300]]}",
			`  "cluster_uuid" : "` + uuid4B64("c1") + `",`,
			"{" + uuid4B64("a") + "}{" + uuid4B64("b") + "}{10.0.0.5}{10.0.0.5:9300}",
			"{_" + uuid4B64("u")[1:] + "}", // base64url may start with '_'
		},
		"XMP packet id": {
			`<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>`,
		},
		"count under a secret name": {
			`      "secrets":"12",`,
			`    secrets: "3"`,
		},
		"path of words": {
			`$ kubectl --server=https://127.0.0.1:6443 --token=alice/system:admins create -f rbac/roles.yaml`,
			`$ kubectl --token=bob/restricted-pod-users get pods`,
		},
		"reference after a scheme or before an escaped newline": {
			`        NPM_AUTH: "Bearer ${{secrets.REGISTRY_TOKEN}}"`,
			`        printf -- "---\n:registry_api_key: ${REGISTRY_KEY}\n" > $HOME/.cfg/credentials`,
		},
		"pointer passed on": {
			"\t\tBearerToken: *accessToken,",
			"\tlogin(user, *password)",
		},
		"password that is the user name": {
			`worker --broker=amqp://guest:guest@${MQ_HOST:localhost}:5672//`,
			`BROKER_URL=amqp://admin:admin@mq-service:5672`,
		},
	} {
		for _, in := range texts {
			var sum Summary
			if out := r.Text(in, &sum); out != in {
				t.Errorf("%s: %q\n   became %q", class, in, out)
			}
		}
	}
}

// Secrets in the same places still go.
func TestWiderRealTextSecretsGo(t *testing.T) {
	r := New(Options{})
	tok := func(seed string, n int) string { // a generated token, no '+' or '/'
		return base64.RawURLEncoding.EncodeToString(fixtureBytes(seed, n))
	}
	not4 := fixtureBytes("not-v4", 16)
	not4[6] = not4[6]&0x0f | 0x70 // no version 4
	not4B64 := base64.RawURLEncoding.EncodeToString(not4)
	for _, c := range []struct{ in, secret string }{
		{`api_key: ` + tok("k1", 24) + "\n" + `src="data:image/png;base64,` + tok("png", 60), tok("k1", 24)},
		{"# notes\n" + tok("p1", 22) + "==", tok("p1", 22)},
		{"short line\n" + tok("p2", 30) + `"`, tok("p2", 30)},
		{"[node][" + not4B64 + "][host]", not4B64},
		{`      "secrets":"4821",`, "4821"},
		{`      "secret":"12",`, `"12"`},
		{`--token=alice/Adm1n:s3cret`, "Adm1n:s3cret"},
		{`NPM_AUTH: "Bearer ` + tok("b1", 30) + `"`, tok("b1", 30)},
		{`printf ":api_key: ` + tok("e1", 30) + `\n"`, tok("e1", 30)},
		{`amqp://admin:S3cretPw9@mq-service:5672`, "S3cretPw9"},
		{`amqp://guest:guest2x@mq:5672`, "guest2x"},
		{`password: "*hunter2x"`, "hunter2x"},
		{`password: "!@#$%^&*"`, "!@#$%^&*"},
		{`auth = (s3cretPw9xQ, user)`, "s3cretPw9xQ"},
		{`token: https://user:` + tok("u1", 20) + `@auth.example.org/`, tok("u1", 20)},
		{`token: https://auth.example.org/?access_token=` + tok("u2", 20), tok("u2", 20)},
		{"BTC " + badChecksum(base58Check(0, fixtureBytes("btc", 20))), badChecksum(base58Check(0, fixtureBytes("btc", 20)))},
		{`password = "` + tok("cc", 24) + `" + suffix`, tok("cc", 24)},
	} {
		var sum Summary
		if out := r.Text(c.in, &sum); strings.Contains(out, c.secret) {
			t.Errorf("%q: %q survived: %q", c.in, c.secret, out)
		}
	}
}

func TestWiderShapes(t *testing.T) {
	for _, c := range []struct {
		f    func(string) bool
		name string
		v    string
		want bool
	}{
		{base64UUID, "base64UUID", uuid4B64("x"), true},
		{base64UUID, "base64UUID", uuid4B64("x") + "A", false},
		{wordPath, "wordPath", "foo/system:masters", true},
		{wordPath, "wordPath", "dev/service-account", true},
		{wordPath, "wordPath", "foo/sys2em", false},
		{wordPath, "wordPath", "Foo/Bar", false},
		{wordPath, "wordPath", "system:masters", false},
		{wordPath, "wordPath", "a//b", false},
	} {
		if got := c.f(c.v); got != c.want {
			t.Errorf("%s(%q) = %v, want %v", c.name, c.v, got, c.want)
		}
	}
	if !defaultLogin("guest", "guest") || defaultLogin("guest", "Guest") || defaultLogin("u1", "u1") || defaultLogin("root", "r00t") {
		t.Error("defaultLogin")
	}
}
