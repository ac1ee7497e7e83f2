package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Text whose secret-named values are plain by their shape (plain.go): each
// class as the real-text and source-code sets of scripts/redact-report.sh
// show it, written anew. None may change as text.
func TestPlainValuesStay(t *testing.T) {
	r := New(Options{})
	for class, lines := range map[string][]string{
		"short": {
			`  url = httpbin("basic-auth", "user", "pass")`,
			`	{"wrong token", "GET", base, "/items?token=nope", 401},`,
			`	return usage("--token and --token-file: give one")`,
			`// The address with ?token= once sets the cookie.`,
			`	repeatToken = "@@zz"`,
			`	req.Header.Set("X-Feature-Auth", "off")`,
			`	{"otlphttp://u:p@h:4318", false},`,
			`	c.Password = v`,
			`	tp.refreshToken = rt`,
		},
		"name of a secret": {
			`	AclResourceDelegationToken: "DelegationToken",`,
			`	RefreshToken     = "refresh_token"`,
			`	ClientCredential = "client_credentials"`,
			`	const headerAuxiliaryAuthorization = "x-ms-authorization-auxiliary"`,
			`	HeaderAuthorization = "Authorization"`,
			`	const credNameSecret = "ClientSecretCredential"`,
			`	return AccessToken{Token: "fake_token", ExpiresOn: now}`,
			`	go(base + "/items?token=wrong-token-wrong-token")`,
		},
		"dotted name": {
			`	layerSession = "session.new" // setsid`,
			`	serviceAccountKey = "oauth2.google.serviceAccount"`,
			`	password = "getpass.getpass"`,
			`	token = 'config.token'`,
		},
		"upper-case word": {
			`	SASLTypeOAuth = "OAUTHBEARER"`,
		},
		"address": {
			`	f.Listen, f.Token = "0.0.0.0:8780", "short"`,
			`	token = "127.0.0.1:4000"`,
		},
		"counting, named": {
			`	const token = "0123456789abcdef-token"`,
			`	secret = "abcdefghij_secret"`,
		},
		"format": {
			`	return fmt.Sprintf("%s Credential=%s/%s, SignedHeaders=%s", alg, id, scope, h)`,
		},
		"message": {
			`	return errors.New("idtoken: CredentialsFile and CredentialsJSON must not both be provided")`,
			`	return fmt.Errorf("idtoken: token expired: now=%v, expires=%v", a, b)`,
			`	return errors.New("credentials: STSAudience must be set for the GDCH auth flows")`,
			`	return errors.New("credentials: \"certificate\" object must either specify a location or use the default")`,
		},
		"base64 of a plain value": {
			`   discovery.auth.password: ` + base64.StdEncoding.EncodeToString([]byte("demo")),
		},
		"the documented example passphrase": {
			`	const token = "correct-horse-battery-staple"`,
		},
		"hex with underscores": {
			`		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},`,
		},
	} {
		for _, l := range lines {
			var sum Summary
			if out := r.Text(l, &sum); out != l {
				t.Errorf("%s: %q\n   became %q", class, l, out)
			}
		}
	}
}

// The same names with secrets: a plain shape is a narrow one.
func TestPlainValuesDoNotHideSecrets(t *testing.T) {
	r := New(Options{})
	for _, c := range []struct{ line, secret string }{
		{`password: Super_Secret`, "Super_Secret"},
		{`password = 4821`, "4821"},
		{`DB_PASSWORD=hunter2.two`, "hunter2.two"},
		{`keystore_password: cassandra`, "cassandra"},
		{`token = "a0AfH6SMBx-long-token"`, "a0AfH6SMBx"},
		{`token = "tok3n-9f8e7d6c5b4a-token"`, "9f8e7d6c5b4a"},
		{`Authorization: Bearer abc.def-ghi`, "abc.def-ghi"},
		{`curl -u :glpat1234567890abcdef https://h/`, "glpat1234567890abcdef"},
		{`{"msg":"password: HunterTwo was rejected"}`, "HunterTwo"},
		{`{"msg":"password: \"hunter2x\" was rejected and is not valid"}`, "hunter2x"},
		{`password: "purple monkey dishwasher tuesday"`, "purple monkey"},
		{`password = "Zq81kLm0x.Rt55pVa9"`, "Zq81kLm0x"},
		{`api_key: ` + base64.StdEncoding.EncodeToString([]byte("s3cr3t-V4lue-77")), base64.StdEncoding.EncodeToString([]byte("s3cr3t-V4lue-77"))[:12]},
		{`https://12345678-ABCD-ABCD-ABCD-1234567890AB@git.example.com/r.git`, "12345678-ABCD"},
		{`token = "ABCDEFGHIJ"`, "ABCDEFGHIJ"},
		{`password = "XKQZBMWPRTLV"`, "XKQZBMWPRTLV"},
	} {
		var sum Summary
		if out := r.Text(c.line, &sum); strings.Contains(out, c.secret) {
			t.Errorf("%q: %q survived: %q", c.line, c.secret, out)
		}
	}
}

func TestPlainShapes(t *testing.T) {
	for _, c := range []struct {
		f    func(string) bool
		name string
		v    string
		want bool
	}{
		{secretName, "secretName", "DelegationToken", true},
		{secretName, "secretName", "x-ms-authorization-auxiliary", true},
		{secretName, "secretName", "Super_Secret", false},
		{secretName, "secretName", "a0AfH6SMBx-long-token", false},
		{secretName, "secretName", "TOKEN_FILE", true},
		{dottedName, "dottedName", "session.new", true},
		{dottedName, "dottedName", "hunter2.two", false},
		{dottedName, "dottedName", "oauth2.google.serviceAccount", true},
		{upperWord, "upperWord", "OAUTHBEARER", true},
		{upperWord, "upperWord", "XKQZBMWPRTLV", false},
		{address, "address", "0.0.0.0:8780", true},
		{address, "address", "localhost:80", true},
		{address, "address", "1.2.3:4", false},
		{counting, "counting", "0123456789abcdef", true},
		{counting, "counting", "x9f8e7d6c5b4a3", false},
		{verbsOnly, "verbsOnly", "%s/%s", true},
		{verbsOnly, "verbsOnly", "%sabc", false},
		{message, "message", "CredentialsFile and CredentialsJSON must not both be provided", true},
		{message, "message", "HunterTwo was rejected", false},
	} {
		if got := c.f(c.v); got != c.want {
			t.Errorf("%s(%q) = %v, want %v", c.name, c.v, got, c.want)
		}
	}
}
