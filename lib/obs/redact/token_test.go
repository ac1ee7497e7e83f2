package redact

import (
	"strings"
	"testing"
)

// TestTokenSpan: a finding removes the whole token around its secret, and
// never a character outside it.
func TestTokenSpan(t *testing.T) {
	for _, c := range []struct {
		text, secret, match string // match "": the secret
		want                string
	}{
		{"x ZXlKaGJHY2lPaUpJVXpJMU5pSjku y", "aGJHY2lPaU", "", "ZXlKaGJHY2lPaUpJVXpJMU5pSjku"},
		{"key=abcSECRETdef&x=1", "SECRET", "", "abcSECRETdef"},
		{"token: ab+c/SECRET+x/y== end", "SECRET", "ab+c/SECRET+x/y", "ab+c/SECRET+x/y=="},
		{"https://h/p/SECRET/q", "SECRET", "", "SECRET"},       // '/' outside the match ends it
		{"using SECRET-v2.", "SECRET", "", "SECRET-v2"},        // the sentence's '.' stays
		{"SECRET=value", "SECRET", "", "SECRET"},               // an assignment, not padding
		{"SECRET== rest", "SECRET", "", "SECRET=="},            // padding
		{`line\nSECRET`, "SECRET", "", "SECRET"},               // the escape's letter stays
		{`"[REDACTED:jwt]SECRET"`, "SECRET", "", "SECRET"},     // a marker is not part of it
		{"a.b-c_d~SECRET~e", "SECRET", "", "a.b-c_d~SECRET~e"}, // URL-safe characters
	} {
		a := strings.Index(c.text, c.secret)
		ma, mb := a, a+len(c.secret)
		if c.match != "" {
			ma = strings.Index(c.text, c.match)
			mb = ma + len(c.match)
		}
		ta, tb := tokenSpan(c.text, a, a+len(c.secret), ma, mb)
		if got := c.text[ta:tb]; got != c.want {
			t.Errorf("tokenSpan(%q, %q) = %q, want %q", c.text, c.secret, got, c.want)
		}
	}
}

// TestWholeTokenRedacted: gitleaks' jwt-base64 rule has no secret group and
// names the JOSE header its groups match, so gitleaks' secret is a few
// characters of the token; the whole token goes.
func TestWholeTokenRedacted(t *testing.T) {
	r := New(Options{})
	// base64 of a JWT with the header {"alg":"HS256","typ":"JWT"}.
	tok := "ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5LmV5SnpkV0lpT2lJeE1qTTBOVFkzT0Rrd0lpd2libUZ0WlNJNklrcHZhRzRnUkc5bElpd2lhV0YwSWpveE5URTJNak01TURJeWZRLlNmbEt4d1JKU01lS0tGMlFUNGZ3cE1lSmYzNlBPazZ5SlZfYWRRc3N3NWM="
	for _, in := range []string{tok, "token " + tok + " end", `{"a":"` + tok + `"}`, "x/" + tok} {
		var sum Summary
		out := r.Text(in, &sum)
		if strings.Contains(out, tok[4:20]) || strings.Contains(out, tok[len(tok)-20:]) || sum.Count() == 0 {
			t.Errorf("%q: part of the token left: %q", in, out)
		}
	}
}

// TestURLCredentials: the userinfo of any scheme's URL (a password, and a
// user name that is a token) and secret-named parameters of the query and
// the fragment go; logins and ordinary parameters stay.
func TestURLCredentials(t *testing.T) {
	r := New(Options{})
	for _, c := range []struct{ in, want string }{
		{"https://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@api.example.com/x",
			"https://[REDACTED:url-credentials]@api.example.com/x"},
		{"https://hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789:x-oauth-basic@host/", "https://[REDACTED:url-credentials]@host/"},
		{"postgres://app:s3cret-pw@db:5432/app", "postgres://[REDACTED:url-credentials]@db:5432/app"},
		{"ssh://git@github.com/art-runtime/art.git", "ssh://git@github.com/art-runtime/art.git"},
		{"git+ssh://deploy-bot@host/repo", "git+ssh://deploy-bot@host/repo"},
		{"https://app/cb#access_token=ya29.a0AfH6SMBx-long-token&token_type=Bearer&expires_in=3599",
			"https://app/cb#access_token=[REDACTED:url-query-secret]&token_type=Bearer&expires_in=3599"},
		{"https://github.com/o/r/blob/main/x.go#L42", "https://github.com/o/r/blob/main/x.go#L42"},
		{"https://h/p?api_key=abc123def456&page=2#frag", "https://h/p?api_key=[REDACTED:url-query-secret]&page=2#frag"},
	} {
		var sum Summary
		if got := r.Text(c.in, &sum); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestQuotedHeaderValue: a secret-named header inside quotes keeps going
// to the closing quote, over '}', ']' and ',' (a token may hold them).
func TestQuotedHeaderValue(t *testing.T) {
	r := New(Options{})
	for in, want := range map[string]string{
		`curl -H 'X-Api-Key: abc}def]ghi,jk' https://x`: `curl -H 'X-Api-Key: [REDACTED:unsafe-key]' https://x`,
		`curl -H "X-Auth-Token: t0k]en" -d '{}'`:        `curl -H "X-Auth-Token: [REDACTED:unsafe-key]" -d '{}'`,
		`{"password": "a}b4x9z"}`:                       `{"password": "[REDACTED:unsafe-key]"}`,
	} {
		var sum Summary
		if got := r.Text(in, &sum); got != want {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want)
		}
	}
}
