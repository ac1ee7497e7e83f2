package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDecodedSecrets: a secret inside base64 (both alphabets, padded or
// not), hex, percent-encoding, escapes, or several of them nested, is
// removed with the whole encoded run it came from.
func TestDecodedSecrets(t *testing.T) {
	const pat = "ghp_R2cLqX9wZk3VbN7mT4yH8sJ1fD6gA0eP5uIo"
	config := "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8mN2Lk\nregion = eu-west-1\n"
	b64 := base64.StdEncoding.EncodeToString
	raw := base64.RawURLEncoding.EncodeToString
	for name, c := range map[string]struct{ in, gone string }{
		"base64 config":        {"creds: " + b64([]byte(config)), "wJalrXUtnFEMI"},
		"base64url unpadded":   {"x " + raw([]byte("token: "+pat+"\n")) + " y", raw([]byte("token: " + pat))[:12]},
		"hex":                  {"dump " + hex.EncodeToString([]byte("GITHUB_TOKEN="+pat)), hex.EncodeToString([]byte("GITHUB_TOKEN="))},
		"percent":              {"https://app/cb?next=" + url.QueryEscape("https://deploy:hunter2-s3cret@db.internal/"), "hunter2"},
		"percent token":        {"q=" + url.QueryEscape("auth "+pat+" x"), pat[4:16]},
		"base64 of base64":     {"v=" + b64([]byte("inner "+b64([]byte("export API_TOKEN="+pat)))), pat[4:16]},
		"base64 of percent":    {b64([]byte("redirect=" + url.QueryEscape("password="+"Zq8-hunter2-x"))), "hunter2"},
		"json escape":          {`{\"token\": \"` + pat + `\"}`, pat[4:16]},
		"shell hex escape":     {`printf $'\x67hp_R2cLqX9wZk3VbN7mT4yH8sJ1fD6gA0eP5uIo'`, "R2cLqX9wZk3V"},
		"base64 in json value": {`{"k8s":"` + b64([]byte("apiVersion: v1\nstringData:\n  password: Zq8mN2Lk77hunter\n")) + `"}`, "Zq8mN2Lk77"},
	} {
		r := New(Options{})
		var sum Summary
		out := r.Text(c.in, &sum)
		if sum.Count() == 0 || strings.Contains(out, c.gone) {
			t.Errorf("%s: %q\n  -> %q (%v)", name, c.in, out, sum.Reasons())
		}
		// Nothing of the encoded run is left either.
		if dec := decodedText(out); strings.Contains(dec, c.gone) {
			t.Errorf("%s: the secret is still readable decoded: %q", name, dec)
		}
		assertFixedPointText(t, r, out, name)
	}
}

// decodedText is every base64 run of s decoded (what a reader could do).
func decodedText(s string) string {
	var b strings.Builder
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r > 127 || !b64Char[byte(r)] && r != '=' }) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if d, err := enc.DecodeString(f); err == nil {
				b.Write(d)
			}
		}
	}
	return b.String()
}

// TestDecodedHarmless: encoded data without secrets is left as it is:
// hashes, ids, base64 of ordinary text.
func TestDecodedHarmless(t *testing.T) {
	r := New(Options{})
	for _, in := range []string{
		base64.StdEncoding.EncodeToString([]byte("hello, this is an ordinary sentence with no secret in it")),
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"h1:OsiLlxUxF9VT+uOO1ZA7AMeKyQ6bSeeu9T0czLO9GOA=",
		"https://example.com/search?q=" + url.QueryEscape("a b & c"),
		"github.com/art-runtime/art/lib/obs/redact/internal/gltable",
	} {
		var sum Summary
		if out := r.Text(in, &sum); out != in {
			t.Errorf("%q changed: %q (%v)", in, out, sum.Reasons())
		}
	}
}

func assertFixedPointText(t *testing.T, r *Redactor, out, what string) {
	t.Helper()
	var sum Summary
	if again := r.Text(out, &sum); again != out || sum.Count() != 0 {
		t.Errorf("%s: not a fixed point:\n %q\n %q", what, out, again)
	}
}

// FuzzDecodedSecret: a secret encoded (base64 either alphabet, hex,
// percent), at any depth up to the bound, inside any text, is removed;
// the output of any JSON text (an object or array) stays valid, and
// redaction is a fixed point.
func FuzzDecodedSecret(f *testing.F) {
	f.Add("prefix ", " suffix", uint8(0), uint8(1))
	f.Add(`{"a":"`, `"}`, uint8(5), uint8(2))
	f.Add("%41%", "==", uint8(2), uint8(3))
	r := New(Options{Limits: Limits{String: 1 << 20, Total: 4 << 20}})
	const secret = "GITHUB_TOKEN=ghp_R2cLqX9wZk3VbN7mT4yH8sJ1fD6gA0eP5uIo"
	f.Fuzz(func(t *testing.T, prefix, suffix string, encodings, depth uint8) {
		v := secret
		for i := range int(depth%maxDecodeDepth) + 1 {
			switch (encodings >> (2 * i)) & 3 {
			case 0:
				v = base64.StdEncoding.EncodeToString([]byte(v))
			case 1:
				v = base64.RawURLEncoding.EncodeToString([]byte(v))
			case 2:
				v = hex.EncodeToString([]byte(v))
			case 3:
				v = url.QueryEscape(v)
			}
		}
		in := prefix + " " + v + " " + suffix
		var sum Summary
		out := r.Text(in, &sum)
		if strings.Contains(out, v) {
			t.Fatalf("encoded secret left whole: %q -> %q", in, out)
		}
		if utf8.ValidString(in) && jsonLike(in) && json.Valid([]byte(in)) && !json.Valid([]byte(out)) {
			t.Fatalf("valid JSON became invalid: %q -> %q", in, out)
		}
		var again Summary
		if r.Text(out, &again) != out {
			t.Fatalf("not a fixed point: %q", out)
		}
	})
}
