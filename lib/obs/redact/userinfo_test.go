package redact

import (
	"strings"
	"testing"
)

// TestUserinfoWhole is the attacker's view of credentials written as
// user:password: a URL's userinfo and curl's -u/--user value are one
// credential, and none of either half may be left readable beside the
// marker (Sidekiq's gems.contribsys.com URLs carry the key as
// "id:secret", and a user name is half of a Basic credential). What a
// reader of the output sees is checked for every 8-character window of
// the credential.
func TestUserinfoWhole(t *testing.T) {
	r := New(Options{})
	for _, c := range []struct {
		in, cred string // cred: the credential, none of it may stay
	}{
		{"https://cafebabe:deadbeef@gems.contribsys.com/", "cafebabe:deadbeef"},
		{"http://cafebabe:deadbeef@gems.contribsys.com", "cafebabe:deadbeef"},
		{"bundle config gems.contribsys.com https://0a1b2c3d:4e5f6a7b@enterprise.contribsys.com", "0a1b2c3d:4e5f6a7b"},
		{"push to https://ci-builder:hunter2hunter2@git.example.com/x.git failed", "ci-builder:hunter2hunter2"},
		{"postgres://app_owner:s3cret-pw@db:5432/app", "app_owner:s3cret-pw"},
		{"curl -k -X POST https://h/rest \\\n  -d 'world' \\\n  -u developer:yqDVtkqPECriaLRi", "developer:yqDVtkqPECriaLRi"},
		{"curl -u 'admin-user:p4ss w0rd' https://h/", "admin-user:p4ss w0rd"},
		{`curl --user "svc-account:Zx81kq0Lm" https://h/`, "svc-account:Zx81kq0Lm"},
		{"curl --user=svc-account:Zx81kq0Lm https://h/", "svc-account:Zx81kq0Lm"},
		{"curl -sf -u :glpat1234567890abcdef https://h/", ":glpat1234567890abcdef"},
	} {
		for _, in := range []string{c.in, `{"cmd": "` + strings.ReplaceAll(c.in, "\n", `\n`) + `"}`} {
			var sum Summary
			out := r.Text(in, &sum)
			if sum.Count() == 0 {
				t.Errorf("%q: nothing redacted", in)
				continue
			}
			for i := 0; i+min(8, len(c.cred)) <= len(c.cred); i++ {
				if w := c.cred[i : i+min(8, len(c.cred))]; strings.Contains(out, w) && !strings.Contains(strings.ReplaceAll(in, c.cred, ""), w) {
					t.Errorf("%q: %q left readable in %q", in, w, out)
					break
				}
			}
			if again := r.Text(out, &sum); again != out {
				t.Errorf("%q: not a fixed point: %q → %q", in, out, again)
			}
		}
	}
}

// TestUserinfoStays: what is not a credential stays: logins without a
// password, placeholders and references in the password, and -u values
// outside curl (docker run -u UID:GID).
func TestUserinfoStays(t *testing.T) {
	r := New(Options{})
	for _, in := range []string{
		"ssh://git@github.com/art-runtime/art.git",
		"https://${GIT_USER}:${GIT_TOKEN}@github.com/o/r.git",
		"https://user:$TOKEN@github.com/o/r.git",
		"https://user:<password>@host/",
		"docker run -u 1000:1000 golang:1.23 go test ./...",
		"git push -u origin main:main",
		"curl -u user:$PASSWORD https://h/",
		"curl -u \"$USER:$PASS\" https://h/",
		"curl -u user https://h/",
		"sort -u a:b",
	} {
		var sum Summary
		if got := r.Text(in, &sum); got != in {
			t.Errorf("%q changed: %q", in, got)
		}
	}
}
