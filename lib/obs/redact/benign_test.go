package redact

import (
	"strings"
	"testing"
)

// Lines of real text that carry secret-like names but no secret: none may
// change, as text, as a value under a secret-named key, or inside JSON.
var benignLines = map[string][]string{
	"go.sum": {
		"golang.org/x/oauth2 v0.30.0 h1:dnDm7JmhM45NNpd8FDDeLhK6FwqbOf4MLCM9zb1BOHU=",
		"golang.org/x/oauth2 v0.30.0/go.mod h1:B++QgG3ZKulg6sRPGD/mqlHQs5rB3Ml9erfeDY7xKlU=",
		"github.com/googleapis/enterprise-certificate-proxy v0.3.6 h1:GW/XbdyBFQ8Qe+YAmFU9uHLo7OyF5tL52HQAgcpWbh0=",
		"cloud.google.com/go/auth v0.16.2 h1:QvBAGFPLrDeoiNjyfVunhQ10HKNYuOwZ5noee0M5df4=",
		"cloud.google.com/go/auth/oauth2adapt v0.2.8 h1:keo8NaayQZ6wimpNSmW5OPc283g65QNIiLpZnkHRbnc=",
		"github.com/golang-jwt/jwt/v5 v5.2.2 h1:Rl4B7itRWVtYIHFrSNd7vhTiz9UpLdi6gZhZ3wEeDy8=",
		"github.com/docker/docker-credential-helpers v0.9.3 h1:gAm/VtF9wgqJMoxzT3Gj5p4AqIjCBS4wrsOh9yRqcz8=",
	},
	"package-lock.json": {
		`    "node_modules/gtoken": {`,
		`      "version": "7.1.0",`,
		`      "resolved": "https://registry.npmjs.org/gtoken/-/gtoken-7.1.0.tgz",`,
		`      "integrity": "sha512-pCcEwRi+TKpMlxAQObHDQ56KawURgyAf6jtIY046fJ5tIv3zDe/LEIubckAO8fj6JnAxLdmWkUfNeulQ2iKdEw==",`,
		`    "node_modules/@octokit/auth-token": {`,
		`        "gtoken": "^7.0.0",`,
		`        "@octokit/auth-token": "^4.0.0",`,
		`        "google-auth-library": "^9.0.0",`,
		`        "jsonwebtoken": "9.0.2",`,
		`    "passport-oauth2": ">=1.6.1 <2",`,
	},
	"github actions": {
		`          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`,
		`          token: ${{ secrets.CODECOV_TOKEN }}`,
		`          password: ${{ secrets.DOCKERHUB_TOKEN }}`,
		`        run: echo "NPM_TOKEN=${{ secrets.NPM_TOKEN }}" >> $GITHUB_ENV`,
		`          api-key: ${{ inputs.api-key || secrets.API_KEY }}`,
		`        env: { NODE_AUTH_TOKEN: "${{ secrets.NPM_TOKEN }}" }`,
		`      - run: curl -H "Authorization: token ${GITHUB_TOKEN}" https://api.github.com/user`,
		`      - run: curl -H "Authorization: Bearer $(gcloud auth print-access-token)" "$URL"`,
		`      - run: docker login -u ci --password "$DOCKER_PASSWORD" ghcr.io`,
	},
	"kubernetes": {
		`        - name: DB_PASSWORD`,
		`          valueFrom:`,
		`            secretKeyRef: {name: db, key: password}`,
		`  password: {{ .Values.postgresql.auth.password | quote }}`,
		`  token: "{{ required "a token is required" .Values.token }}"`,
		`  client_secret: <client-secret>`,
		`  api_key: YOUR_API_KEY`,
		`      password: changeme`,
		`  secret: "********"`,
	},
	"python": {
		`    password = getpass.getpass("Password: ")`,
		`    credentials = service_account.Credentials.from_service_account_file(path)`,
		`api_key = os.environ["OPENAI_API_KEY"]`,
		`token = os.getenv("GITHUB_TOKEN")`,
		`        self.token = token or self.config.token`,
		`    secret = settings.SECRET_KEY`,
		`    password = None`,
		`    auth_token = request.headers.get("X-Auth-Token", "")`,
		`    session_token = base_token + suffix`,
		`    return {"password": "%(password)s"}`,
	},
	"more real lines": {
		`      id-token: write`,
		`          server-password: MAVEN_PASSWORD`,
		`    def __init__(self, username: bytes | str, password: bytes | str) -> None:`,
		`        auth: AuthTypes | None = None,`,
		`    auth: AuthTypes`,
		`        auth: _t.AuthType = None,`,
		`    auth: _t.AuthType`,
		`    cookies: RequestsCookieJar`,
		`		bw := []string{"--unshare-all", "--new-session", "--die-with-parent"}`,
		`	p, err := openai.New(openai.Config{BaseURL: c.BaseURL, APIKey: c.APIKey})`,
		`        auth = (unquote(parsed.username), unquote(parsed.password))`,
		`    self.auth = auth`,
		`  When proxies are defined with user info (https://user:pass@proxy:8080), Requests`,
	},
	"shell and docs": {
		`export GITHUB_TOKEN=$(gh auth token)`,
		`export API_TOKEN="${API_TOKEN:-}"`,
		`curl "https://circleci.com/api/v1.1/me?circle-token=:circle-token"`,
		`set PASSWORD=%DB_PASSWORD%`,
		`token: !Ref GitHubToken`,
		`  "password": "<password>",`,
		`API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx`,
		`OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`,
	},
	// Prose and code after a secret-like name, from real commits.
	"prose and code": {
		`		// Nothing to apply but a new session: fork does that.`,
		`// session: it applies every restriction to itself and execs the program.`,
		`The debt outlives the session: it is kept`,
		`	// Claim is the claim's fencing token: the sequence of its started`,
		`*  ` + "`apiPassword`" + `: The password to authenticate to the StorageOS API with.`,
		`        :param auth: (optional) Auth tuple or callable to enable`,
		`[Microsoft Learn, Add and manage application credentials: client secrets](https://learn.microsoft.com/)`,
		`		t.Fatalf("a concurrent session: exit %d, %s", code, out)`,
		`		t.Fatalf("status in the next session: %s", b)`,
		`		t.Errorf("read_file ../../etc/passwd: %v; want an isError result", err)`,
		`			panic("tinymodel: reply token is also a learnt token: " + r)`,
		`  getpass.getpass("Password: ")` + "`), an index (`" + `os.environ["API_KEY"]` + "`)",
		`	task.Env.Set = map[string]string{"GH_TOKEN": fakeToken}`,
		`             requests.sessions.get_netrc_auth = old_auth`,
		`	maxBytesPerToken = 8`,
		`	srv := &truncatingServer{ctx: 1 << 30, bytesPerToken: 2}`,
		`		"out", "out/secret", "out-rel/secret", "secret", "sub/upup", "loop",`,
		`     511: ("network_authentication_required", "network_auth", "network_authentication"),`,
		`  (` + "`tps.jsonl`" + `: one ` + "`" + `{"rule","secret","fixed_prefix","contexts"}` + "`" + ` per line,`,
		`        String accountToken = getEnvOrDefault("K8S_ACCOUNT_TOKEN", "/var/run/secrets/kubernetes.io/serviceaccount/token");`,
		`  (` + "`" + `getEnvOrDefault("K8S_ACCOUNT_TOKEN", "…")` + "`" + `).`,
		`value holding a token goes whole (` + "`password: :xoxb-…`" + `); under a map key`,
		`  annotations (` + "`" + `auth: "AuthTypes | None"` + "`" + `), Go struct fields`,
		"`xxxx…`), so `sk_live_publishable_key_name` or `re_evaluate_all_rules` in",
		"Google API keys, `AKIAXXXXXXXXXXXXXXXX`); gitleaks flags 12.",
		// Go sources of the module cache.
		`		return nil, fmt.Errorf("credentials: unable to marshal request: %w", err)`,
		`	return errors.New("auth: token expired and refresh token is not set")`,
		`		return fmt.Errorf("credentials: %q missing %q field", source, field)`,
		"		return errors.New(\"credentials: missing `command` field — executable command must be provided\")",
		`		return "", fmt.Errorf("credentials: HTTP request for URL-sourced credential failed: %w", err)`,
		`	for _, token := range src[indexStart:] {`,
		`		token := tokenResponse.RequestedSecurityToken`,
		`var _ azcore.TokenCredential = (*AzureCLICredential)(nil)`,
		`type AccessToken = exported.AccessToken`,
		`	token := idToken2{}`,
		"		Credential:    cc,",
		`	"htpasswd":                 htpasswd,`,
		`	apiKeySASLAuth                     = 36`,
		`	msiSecret                = "MSI_SECRET"`,
		"  first four; generated secrets: gitleaks' sample lines or three lines of",
		"apiPassword:\t8 bytes",
		"| `private-key` | a PEM block from `-----BEGIN … PRIVATE KEY-----` to its `END` line |",
		"the header -----BEGIN RSA PRIVATE KEY----- starts a key",
	},
}

func TestBenignLinesUntouched(t *testing.T) {
	r := New(Options{})
	for kind, lines := range benignLines {
		for _, l := range lines {
			var sum Summary
			if out := r.Text(l, &sum); out != l {
				t.Errorf("%s: %q became %q (%v)", kind, l, out, sum.Reasons())
			}
		}
	}
}

// Values under secret-named keys: references, placeholders, hashes and
// versions stay; code does not count there (a structured value is data).
func TestBenignMembers(t *testing.T) {
	r := New(Options{})
	for _, v := range []string{
		"${{ secrets.GITHUB_TOKEN }}", "${TOKEN}", "$GITHUB_TOKEN", "$(cat /run/secrets/token)",
		"{{ .Values.password }}", "<password>", ":token", "YOUR_API_KEY", "changeme", "xxxxxxxx",
		"h1:dnDm7JmhM45NNpd8FDDeLhK6FwqbOf4MLCM9zb1BOHU=", "^7.0.0", ">=1.6.1 <2",
	} {
		for _, key := range []string{"token", "password", "GITHUB_TOKEN", "gtoken"} {
			attrs := map[string]any{key: v}
			var sum Summary
			out := string(r.AppendAttrs(nil, attrs, nil, &sum))
			want, _ := jsonCanonical(attrs)
			if out != want {
				t.Errorf("%s=%q became %s (%v)", key, v, out, sum.Reasons())
			}
		}
		var sum Summary
		out := string(r.AppendAttrs(nil, map[string]any{"argv": []any{"login", "--password", v}}, nil, &sum))
		if !strings.Contains(out, jsonEscape(v)) {
			t.Errorf("argv --password %q became %s", v, out)
		}
	}
}

func jsonEscape(v string) string {
	s, _ := jsonCanonical(map[string]any{"v": v})
	return strings.TrimSuffix(strings.TrimPrefix(s, `{"v":`), "}")
}

// The same names with secrets in them: a quoted literal is a literal, a
// reference glued to text is text, and a value holding a token goes.
func TestBenignDoesNotHideSecrets(t *testing.T) {
	r := New(Options{})
	for _, c := range []struct{ line, secret string }{
		{`DB_PASSWORD=hunter2.two`, "hunter2.two"},
		{`API_TOKEN=s3cr3tv4lu3${SUFFIX}`, "s3cr3tv4lu3"},
		{`password: "v1.2.3-rc1-but-long-enough-to-be-a-password-not-a-version"`, "long-enough-to-be"},
		{`secret_key = "9"`, `"9"`},
		{`token = ghp_jgdD8DG7oidj9N6QAhoIb8pBi15cz3goiuvM + suffix`, "jgdD8DG7oidj9N6QAhoIb8pBi15cz3goiuvM"},
		{`password: :xoxb-7428522866191-7955817109800-dI5GN47JQ8aDF7OEHkecuaAo`, "dI5GN47JQ8aDF7OEHkecuaAo"},
		{`Authorization: Bearer x9Kq2LmN4pR7sT1v${{ secrets.T }}`, "x9Kq2LmN4pR7sT1v"},
		{`GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} ghp_jgdD8DG7oidj9N6QAhoIb8pBi15cz3goiuvM`, "jgdD8DG7oidj9N6QAhoIb8pBi15cz3goiuvM"},
		// Not prose: a value with a digit or inner capitals, one at the
		// end of the line, one followed by the next name of a list.
		{`the session: s3ss10n is kept`, "s3ss10n"},
		{`password: hunter2 was used`, "hunter2"},
		{`password: HunTer was used`, "HunTer"},
		{`login failed: password: letmein`, "letmein"},
		{`user: bob password: letmein reason: expired`, "letmein"},
		{`f("a", "b"); System.setProperty("X_TOKEN", "S3cr3tValue")`, "S3cr3tValue"},
		{`keystore_password: cassandra`, "cassandra"},
		{`password: Super_Secret`, "Super_Secret"},
		{`password = "/Xk9q/Lm4T/q8zP"`, "Xk9q/Lm4T"},
		{`token: token123`, "token123"},
		{`password = 4821`, "4821"},
		{`{user: bob, password: hunter2}`, "hunter2"},
		{`"X-Api-Key: Zx81kq0Lm4Tq more"`, "Zx81kq0Lm4Tq"},
		{`{"msg":"token: abc123def expired at noon"}`, "abc123def"},
		{`{"msg":"password: HunterTwo was rejected"}`, "HunterTwo"},
		{`AWS_ACCESS_KEY_ID=AKIAQWERTYUIOPASDFGH`, "QWERTYUIOPASDFGH"},
		{`api_key: sk_live_4eC39HqLyjWDarjtT1zdp7dc`, "4eC39HqLyjWDarjtT1zdp7dc"},
		{`token: ghp_jgdD8DG…`, "jgdD8DG"},
		{`password: 8123 and more`, "8123"},
		{"+-----BEGIN PRIVATE KEY-----\n+MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "MIIEvQIBADANBgkq"},
		{`"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9ZxL`, "MIIEowIBAAKCAQEA"},
		{"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,1A2B\n\nZm9vYmFy", "Zm9vYmFy"},
	} {
		var sum Summary
		if out := r.Text(c.line, &sum); strings.Contains(out, c.secret) {
			t.Errorf("%q: %q survived: %q", c.line, c.secret, out)
		}
	}
	// A member whose benign-looking value holds a token.
	var sum Summary
	out := string(r.AppendAttrs(nil, map[string]any{"token": ":ghp_jgdD8DG7oidj9N6QAhoIb8pBi15cz3goiuvM"}, nil, &sum))
	if strings.Contains(out, "ghp_") || strings.Contains(out, "jgdD8DG7") {
		t.Errorf("member: %s", out)
	}
}

func FuzzBenign(f *testing.F) {
	for _, ls := range benignLines {
		for _, l := range ls {
			f.Add(l)
		}
	}
	r := New(Options{})
	f.Fuzz(func(t *testing.T, s string) {
		// Whatever the text, the checks neither panic nor make redaction
		// lose its fixed point.
		_ = BenignValue(s)
		for a := 0; a < len(s); a += 7 {
			_ = benignText(s, a, len(s))
		}
		out := r.AppendAttrs(nil, map[string]any{"v": s, "token": s}, nil, &Summary{})
		assertFixedPoint(t, r, out, "fuzz benign")
	})
}
