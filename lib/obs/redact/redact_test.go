package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/jsonx"
)

func redactOnce(t testing.TB, r *Redactor, attrs map[string]any, sens ...string) (string, Summary) {
	t.Helper()
	var paths []Path
	for _, s := range sens {
		p, err := ParsePath(s)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var sum Summary
	out := r.AppendAttrs(nil, attrs, paths, &sum)
	if !json.Valid(out) {
		t.Fatalf("output is not valid JSON: %s", out)
	}
	return string(out), sum
}

// panicky would panic if anything formatted it: the redactor must never
// call Error, String or MarshalJSON.
type panicky struct{ secret string }

func (p panicky) Error() string                { panic("Error called") }
func (p panicky) String() string               { panic("String called") }
func (p panicky) MarshalJSON() ([]byte, error) { panic("MarshalJSON called") }

type namedString string

func (namedString) String() string { panic("String called") }

type namedInt int64

func (namedInt) String() string { panic("String called") }

func TestGoValues(t *testing.T) {
	r := New(Options{})
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	loop := make([]any, 2)
	loop[0] = "x"
	loop[1] = loop
	ch := make(chan int)
	tests := []struct {
		name  string
		attrs map[string]any
		want  string
		rules map[string]int
	}{
		{"error value is never formatted", map[string]any{"err": panicky{"ghp_x"}, "perr": &panicky{}}, `{"err":"[REDACTED:unsupported-type]","perr":"[REDACTED:unsupported-type]"}`, map[string]int{"unsupported-type": 2}},
		{"named kinds are copied by kind", map[string]any{"s": namedString("ok"), "n": namedInt(7), "d": 1500 * time.Millisecond}, `{"d":1500000000,"n":7,"s":"ok"}`, nil},
		{"struct, func, chan, complex", map[string]any{"t": time.Unix(0, 0), "f": func() {}, "c": ch, "z": complex(1, 2)}, `{"c":"[REDACTED:unsupported-type]","f":"[REDACTED:unsupported-type]","t":"[REDACTED:unsupported-type]","z":"[REDACTED:unsupported-type]"}`, map[string]int{"unsupported-type": 4}},
		{"map cycle", cyclic, `{"a":1,"self":"[REDACTED:cycle]"}`, map[string]int{"cycle": 1}},
		{"slice cycle", map[string]any{"l": loop}, `{"l":["x","[REDACTED:cycle]"]}`, map[string]int{"cycle": 1}},
		{"bytes are binary", map[string]any{"b": []byte("hello"), "r": json.RawMessage(`{}`)}, `{"b":"[REDACTED:binary]","r":"[REDACTED:binary]"}`, map[string]int{"binary": 2}},
		{"invalid utf-8 value and key", map[string]any{"v": "a\xffb", "k\xfe": 1, "ok": "é"}, `{"ok":"é","v":"[REDACTED:binary]"}`, map[string]int{"binary": 2}},
		{"non-finite floats", map[string]any{"nan": math.NaN(), "inf": math.Inf(-1), "f": float32(0.5)}, `{"f":0.5,"inf":"[REDACTED:non-finite]","nan":"[REDACTED:non-finite]"}`, map[string]int{"non-finite": 2}},
		{"integers beyond 2^53 become strings", map[string]any{"ns": int64(1717171717171717171), "u": uint64(1 << 63), "ok": int64(1 << 53), "j": json.Number("12345678901234567890"), "f": 1e20, "e": 1e21}, `{"e":1e+21,"f":"100000000000000000000","j":"12345678901234567890","ns":"1717171717171717171","ok":9007199254740992,"u":"9223372036854775808"}`, map[string]int{"number-range": 4}},
		{"bad json.Number", map[string]any{"n": json.Number("0x10"), "m": json.Number("1.50")}, `{"m":1.5,"n":"[REDACTED:unsupported-type]"}`, map[string]int{"unsupported-type": 1}},
		{"non-string map keys", map[string]any{"m": map[int]string{1: "a"}}, `{"m":"[REDACTED:unsupported-type]"}`, map[string]int{"unsupported-type": 1}},
		{"nil containers", map[string]any{"m": map[string]any(nil), "s": []any(nil), "ss": []string(nil), "i": nil}, `{"i":null,"m":null,"s":null,"ss":null}`, nil},
		{"typed containers", map[string]any{"h": map[string][]string{"Accept": {"a", "b"}}, "a": [2]int{1, 2}, "ms": map[string]string{"k": "v"}}, `{"a":[1,2],"h":{"Accept":["a","b"]},"ms":{"k":"v"}}`, nil},
		{"unsafe key masks a whole subtree, keeps null and booleans", map[string]any{"credentials": map[string]any{"user": "u", "pass": "p"}, "token": nil, "password": true, "secret": ""}, `{"credentials":"[REDACTED:unsafe-key]","password":true,"secret":"","token":null}`, map[string]int{"unsafe-key": 1}},
		{"unsafe key numbers", map[string]any{"pin_token": json.Number("1234"), "api_key": 42}, `{"api_key":"[REDACTED:unsafe-key]","pin_token":"[REDACTED:unsafe-key]"}`, map[string]int{"unsafe-key": 2}},
	}
	for _, tt := range tests {
		got, sum := redactOnce(t, r, tt.attrs)
		if got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		want := tt.rules
		if want == nil {
			want = map[string]int{}
		}
		if g := sum.Reasons(); !equalCounts(g, want) {
			t.Errorf("%s: reasons %v; want %v", tt.name, g, want)
		}
		assertFixedPoint(t, r, []byte(got), tt.name)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestLimits(t *testing.T) {
	lim := Limits{Depth: 3, String: 200, Key: 20, Members: 3, Items: 4, Total: 2048}
	r := New(Options{Limits: lim})
	deep := map[string]any{"a": map[string]any{"b": map[string]any{"c": 1}, "l": []any{[]any{1}}}}
	got, sum := redactOnce(t, r, deep)
	// attrs is level 1, "a" 2, "b" and "l" 3: the array inside "l" is 4.
	if want := `{"a":{"b":{"c":1},"l":["[REDACTED:depth]"]}}`; got != want {
		t.Errorf("depth:\n got %s\nwant %s", got, want)
	}
	if sum.Of(Depth) != 1 {
		t.Errorf("depth count %d; want 1", sum.Of(Depth))
	}
	long := strings.Repeat("é", 150) // 300 bytes
	got, sum = redactOnce(t, r, map[string]any{"s": long})
	var v map[string]string
	_ = json.Unmarshal([]byte(got), &v)
	if len(v["s"]) > 200 || !strings.HasSuffix(v["s"], "[REDACTED:size]") || !strings.HasPrefix(long, strings.TrimSuffix(v["s"], "[REDACTED:size]")) || sum.Of(Size) != 1 {
		t.Errorf("string cut: %q (%d bytes), %v", v["s"], len(v["s"]), sum.Reasons())
	}
	assertFixedPoint(t, r, []byte(got), "string cut")

	// A secret straddling the cut is masked before cutting.
	tok := "ghp_" + strings.Repeat("A1b2", 9)
	s := strings.Repeat("x", 180) + tok + strings.Repeat("y", 100)
	got, _ = redactOnce(t, r, map[string]any{"s": s})
	if strings.Contains(got, "ghp_") || strings.Contains(got, "A1b2A1b2") {
		t.Errorf("secret across the cut leaked part of itself: %s", got)
	}
	assertFixedPoint(t, r, []byte(got), "cut secret")

	got, sum = redactOnce(t, r, map[string]any{"d": 1, "c": 2, "b": 3, "a": 4, strings.Repeat("k", 21): 5})
	if want := `{"a":4,"b":3,"c":2}`; got != want || sum.Of(Collection) != 1 || sum.Of(Size) != 1 {
		t.Errorf("members: got %s %v; want %s with 1 collection, 1 size", got, sum.Reasons(), want)
	}
	got, sum = redactOnce(t, r, map[string]any{"l": []any{1, 2, 3, 4, 5, 6}})
	if want := `{"l":[1,2,3,"[REDACTED:collection]"]}`; got != want || sum.Of(Collection) != 3 {
		t.Errorf("items: got %s %v; want %s with 3 dropped", got, sum.Reasons(), want)
	}
	assertFixedPoint(t, r, []byte(got), "items")

	// Total: many members with long strings stay within the byte budget.
	r = New(Options{Limits: Limits{Total: 1024, String: 300, Members: 1000}})
	big := map[string]any{}
	for i := range 50 {
		big[strings.Repeat(string(rune('a'+i%26)), 1+i/26)] = strings.Repeat("v", 100)
	}
	got, sum = redactOnce(t, r, big)
	if len(got) > 1024 || sum.Of(Size) == 0 {
		t.Errorf("total: %d bytes, %v; want ≤ 1024 and size counted", len(got), sum.Reasons())
	}
	assertFixedPoint(t, r, []byte(got), "total")
}

func TestScanMaxReplacesWhole(t *testing.T) {
	r := New(Options{Limits: Limits{String: 128, ScanMax: 1000}})
	got, sum := redactOnce(t, r, map[string]any{"s": strings.Repeat("a", 1001)})
	if got != `{"s":"[REDACTED:size]"}` || sum.Of(Size) != 1 {
		t.Errorf("oversized string: %s %v", got, sum.Reasons())
	}
}

func TestSensitivePaths(t *testing.T) {
	r := New(Options{})
	attrs := map[string]any{
		"user":    map[string]any{"name": "alice", "ssn": "078-05-1120"},
		"headers": []any{map[string]any{"k": "X", "v": "one"}, map[string]any{"k": "Y", "v": "two"}},
		"list":    []any{"a", "b", "c"},
		"keep":    "yes",
	}
	got, sum := redactOnce(t, r, attrs, "attrs.user.ssn", "attrs.headers[*].v", "attrs.list[1]", "attrs.missing.path")
	want := `{"headers":[{"k":"X","v":"[REDACTED:sensitive]"},{"k":"Y","v":"[REDACTED:sensitive]"}],"keep":"yes","list":["a","[REDACTED:sensitive]","c"],"user":{"name":"alice","ssn":"[REDACTED:sensitive]"}}`
	if got != want || sum.Of(Sensitive) != 4 {
		t.Errorf("sensitive:\n got %s %v\nwant %s", got, sum.Reasons(), want)
	}
	got, _ = redactOnce(t, r, attrs, "attrs.user", "attrs.*.name")
	if !strings.Contains(got, `"user":"[REDACTED:sensitive]"`) {
		t.Errorf("whole subtree: %s", got)
	}
	for _, bad := range []string{"user.ssn", "attrs", "attrs..x", "attrs[x]", "attrs[-1]", "attrs[01]", "attrs.a[", "attrsx"} {
		if _, err := ParsePath(bad); !errors.Is(err, ErrPath) {
			t.Errorf("ParsePath(%q) = %v; want ErrPath", bad, err)
		}
	}
}

func TestHMACMarkers(t *testing.T) {
	tok := "ghp_" + strings.Repeat("Zz9", 12)
	other := "ghp_" + strings.Repeat("Yy8", 12)
	a := New(Options{HMACKey: []byte("key-one-0123456789")})
	b := New(Options{HMACKey: []byte("key-two-0123456789")})
	g1, _ := redactOnce(t, a, map[string]any{"x": tok, "y": "t=" + tok, "z": other, "password": "hunter2"})
	g2, _ := redactOnce(t, a, map[string]any{"x": tok})
	g3, _ := redactOnce(t, b, map[string]any{"x": tok})
	var m1, m2, m3 map[string]string
	_ = json.Unmarshal([]byte(g1), &m1)
	_ = json.Unmarshal([]byte(g2), &m2)
	_ = json.Unmarshal([]byte(g3), &m3)
	if !strings.HasPrefix(m1["x"], "[REDACTED:github-pat:hmac-sha256:") || len(m1["x"]) != len("[REDACTED:github-pat:hmac-sha256:]")+16 {
		t.Errorf("hmac marker = %q", m1["x"])
	}
	if m1["x"] != m2["x"] || m1["y"] != "t="+m1["x"] {
		t.Errorf("same secret, same key: %q, %q, %q; want equal markers", m1["x"], m2["x"], m1["y"])
	}
	if m1["x"] == m1["z"] || m1["x"] == m3["x"] {
		t.Errorf("different secret or key must give different markers: %q %q %q", m1["x"], m1["z"], m3["x"])
	}
	if !strings.HasPrefix(m1["password"], "[REDACTED:unsafe-key:hmac-sha256:") {
		t.Errorf("unsafe key with hmac = %q", m1["password"])
	}
	assertFixedPoint(t, a, []byte(g1), "hmac")
}

func TestFakeMarkerCannotSmuggle(t *testing.T) {
	r := New(Options{})
	tok := "ghp_" + strings.Repeat("Qq7", 12)
	for _, s := range []string{
		"[REDACTED:" + tok + "]",
		"[REDACTED:github-pat " + tok + "]",
		"[REDACTED:github-pat:hmac-sha256:" + tok + "]",
		"[REDACTED:github-pat]" + tok,
	} {
		got, _ := redactOnce(t, r, map[string]any{"v": s, "password": s})
		if strings.Contains(got, tok) {
			t.Errorf("%q smuggled the token: %s", s, got)
		}
	}
}

func TestTextRules(t *testing.T) {
	r := New(Options{})
	tests := []struct{ in, want string }{
		{"https://user:pa55@host/x?token=abc123x&page=2", "https://[REDACTED:url-credentials]@host/x?token=[REDACTED:url-query-secret]&page=2"},
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer [REDACTED:auth-header]"},
		// Digest: the response is the credential; the other fields are not.
		{"authorization: Digest username=\"u\", response=\"6629fae49393a05397450978507c4ef1\"\nnext", "authorization: Digest username=\"u\", response=\"[REDACTED:auth-header]\"\nnext"},
		{"Authorization: Digest response=6629fae49393a05397450978507c4ef1, nc=00000001", "Authorization: Digest response=[REDACTED:auth-header], nc=00000001"},
		{"Authorization: Digest 6629fae49393a05397450978507c4ef1", "Authorization: Digest [REDACTED:auth-header]"},
		{"Authorization: Digest dXNlcjpwYXNzd29yZDEy=", "Authorization: Digest [REDACTED:auth-header]"},
		{"password = hunter2 done", "password = [REDACTED:unsafe-key] done"},
		{`--token "two words" x`, `--token "[REDACTED:unsafe-key]" x`},
		// The assignment syntaxes of the common languages and formats.
		{`token := "S3cr3tValue"`, `token := "[REDACTED:unsafe-key]"`},
		{`API_TOKEN ?= S3cr3tValue`, `API_TOKEN ?= [REDACTED:unsafe-key]`},
		{`API_TOKEN ::= S3cr3tValue`, `API_TOKEN ::= [REDACTED:unsafe-key]`},
		{`API_TOKEN :::= S3cr3tValue`, `API_TOKEN :::= [REDACTED:unsafe-key]`},
		{`$password .= "S3cr3tValue";`, `$password .= "[REDACTED:unsafe-key]";`},
		{`'api_key' => 'S3cr3tValue',`, `'api_key' => '[REDACTED:unsafe-key]',`},
		{`var apiToken string = "S3cr3tValue"`, `var apiToken string = "[REDACTED:unsafe-key]"`},
		{`const apiToken: string = "S3cr3tValue";`, `const apiToken: string = "[REDACTED:unsafe-key]";`},
		{`System.setProperty("X_TOKEN", "S3cr3tValue");`, `System.setProperty("X_TOKEN", "[REDACTED:unsafe-key]");`},
		{`<password>S3cr3tValue</password>`, `<password>[REDACTED:unsafe-key]</password>`},
		{`<add key="DbPassword" value="S3cr3tValue" />`, `<add key="DbPassword" value="[REDACTED:unsafe-key]" />`},
		{`password           = "S3cr3tValue"`, `password           = "[REDACTED:unsafe-key]"`},
		{`run deploy --token S3cr3tValue --verbose`, `run deploy --token [REDACTED:unsafe-key] --verbose`},
		{`password=pa\ss\word next`, `password=[REDACTED:unsafe-key] next`},
		{`{\"password\":\"S3cr3t\\Value\"}`, `{\"password\":\"[REDACTED:unsafe-key]\"}`},
		{"Authorization: Api-Token S3cr3tValue", "Authorization: Api-Token [REDACTED:auth-header]"},
		// Test output and comparisons are not assignments.
		{"--- PASS: TestTokenRefresh (0.00s)", "--- PASS: TestTokenRefresh (0.00s)"},
		{"    --- FAIL: TestPasswordReset (0.01s)", "    --- FAIL: TestPasswordReset (0.01s)"},
		{"if token != expected {", "if token != expected {"},
		{`assert token == "x"`, `assert token == "x"`},
		{"--token-file /run/secrets/t", "--token-file /run/secrets/t"},
		{`--token="two words" x`, `--token="[REDACTED:unsafe-key]" x`},
		{"password=null token: true", "password=null token: true"},
		{"x AKIAIOSFODNN7EXAMPLE y", "x [REDACTED:aws-access-key] y"},
		{"-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED:private-key]\nafter"},
	}
	for _, tt := range tests {
		var sum Summary
		if got := r.Text(tt.in, &sum); got != tt.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	var sum Summary
	if got := r.Text("a\xffb", &sum); got != "[REDACTED:binary]" || sum.Of(Binary) != 1 {
		t.Errorf("binary header = %q", got)
	}
}

func TestKeyClassifier(t *testing.T) {
	yes := []string{"password", "Password", "DB_PASSWORD", "passwd", "user_pwd", "secret", "client_secret", "clientSecret",
		"token", "access_token", "accessToken", "X-Auth-Token", "GITHUB_TOKEN", "api_key", "apiKey", "APIKey", "x-api-key",
		"apikey", "authorization", "Proxy-Authorization", "cookie", "Set-Cookie", "private_key", "privateKey",
		"access_key", "AWS_SECRET_ACCESS_KEY", "session", "session_id", "sessionid", "credentials", "passphrase", "auth", "ssh_key"}
	no := []string{"max_tokens", "input_tokens", "token_count", "tokens", "secret_name", "secret_ref", "public_key",
		"primary_key", "key", "keys", "monkey", "author", "auth_method", "bypass", "compass", "passage", "sessions",
		"tokenizer", "password_policy", "exit_code", "program", "id", "a", ""}
	for _, k := range yes {
		if !unsafeName(k) {
			t.Errorf("unsafeName(%q) = false; want true", k)
		}
	}
	for _, k := range no {
		if unsafeName(k) {
			t.Errorf("unsafeName(%q) = true; want false", k)
		}
	}
}

func TestRuleIDs(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		id := r.ID()
		if in := r.Info(); id == "" || seen[id] || in.Catches == "" || in.Source == "" || in.Version == "" {
			t.Errorf("rule %d: id %q duplicate or undocumented", r, id)
		}
		seen[id] = true
		if got, ok := RuleByID(id); !ok || got != r {
			t.Errorf("RuleByID(%q) = %v, %v", id, got, ok)
		}
		if !IsMarker("[REDACTED:"+id+"]") || !IsMarker("[REDACTED:"+id+":hmac-sha256:0123456789abcdef]") {
			t.Errorf("markers of %s not recognised", id)
		}
	}
	var s Summary
	s.Add(Size, 2)
	s.Add(AWSAccessKey, 1)
	if got := string(s.AppendJSON(nil)); got != `{"count":3,"reasons":{"aws-access-key":1,"size":2}}` {
		t.Errorf("summary JSON = %s", got)
	}
}

// TestPropertyRandomValues: for random trees mixing corpus secrets, unicode,
// invalid bytes and deep/wide shapes, the output is valid, bounded, holds no
// corpus secret and is a fixed point.
func TestPropertyRandomValues(t *testing.T) {
	c := loadCorpus(t)
	var secrets []string
	for _, e := range c.Secrets {
		if e.Key == "" && e.Text == "" {
			secrets = append(secrets, e.Secret)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lim := Limits{Depth: 6, String: 400, Members: 8, Items: 8, Total: 4096}
	r := New(Options{Limits: lim})
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		attrs := randomMap(rng, secrets, 0)
		var sum Summary
		out := r.AppendAttrs(nil, attrs, nil, &sum)
		if !json.Valid(out) {
			t.Fatalf("case %d: invalid JSON %s", i, out)
		}
		if len(out) > lim.Total {
			t.Fatalf("case %d: %d bytes > %d", i, len(out), lim.Total)
		}
		for _, s := range secrets {
			if strings.Contains(string(out), s) {
				t.Fatalf("case %d: secret %q leaked: %s", i, s, out)
			}
		}
		if canon, err := jsonx.Canonical(out); err != nil || string(canon) != string(out) {
			t.Fatalf("case %d: output not canonical: %v\n%s\n%s", i, err, out, canon)
		}
		assertFixedPoint(t, r, out, "random")
	}
}

func randomString(rng *rand.Rand, secrets []string) string {
	parts := []string{"a", "go", " ", "=", ":", "://", "@", "?", "&", "token", "password", "é", "😀", "\n", "\x00", "\"",
		"\\", "[REDACTED:", "]", "[REDACTED:size]", "Bearer ", "Authorization: ", "-----BEGIN PRIVATE KEY-----", "x", "\xff", "sk-", "ghp_"}
	var b strings.Builder
	for range rng.IntN(8) {
		if rng.IntN(6) == 0 {
			b.WriteString(secrets[rng.IntN(len(secrets))])
		} else {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
	}
	if rng.IntN(20) == 0 {
		b.WriteString(strings.Repeat("long text ", 60))
	}
	return b.String()
}

func randomMap(rng *rand.Rand, secrets []string, depth int) map[string]any {
	m := map[string]any{}
	for range rng.IntN(12) {
		m[randomString(rng, secrets)] = randomValue(rng, secrets, depth+1)
	}
	return m
}

func randomValue(rng *rand.Rand, secrets []string, depth int) any {
	if depth > 8 {
		return nil
	}
	switch rng.IntN(9) {
	case 0:
		return randomMap(rng, secrets, depth)
	case 1:
		a := make([]any, rng.IntN(12))
		for i := range a {
			a[i] = randomValue(rng, secrets, depth+1)
		}
		return a
	case 2:
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
	case 3:
		return rng.Int64()
	case 4:
		return rng.IntN(2) == 0
	case 5:
		return nil
	}
	return randomString(rng, secrets)
}

func FuzzRedactSecretInText(f *testing.F) {
	c := loadCorpus(f)
	var secrets []string
	for _, e := range c.Secrets {
		if e.Glue {
			secrets = append(secrets, e.Secret)
		}
	}
	f.Add("prefix ", " suffix", uint(0))
	f.Add("[REDACTED:", "]", uint(3))
	f.Add("token=", "", uint(5))
	f.Add("https://", "@host", uint(7))
	r := New(Options{Limits: Limits{String: 512}})
	f.Fuzz(func(t *testing.T, prefix, suffix string, i uint) {
		s := secrets[i%uint(len(secrets))]
		attrs := map[string]any{"v": prefix + s + suffix, "k": []any{prefix, s, suffix}}
		var sum Summary
		out := r.AppendAttrs(nil, attrs, nil, &sum)
		if !json.Valid(out) || len(out) > r.lim.Total {
			t.Fatalf("invalid or unbounded output: %q", out)
		}
		if strings.Contains(string(out), s) {
			t.Fatalf("secret %q survived in %s", s, out)
		}
		assertFixedPoint(t, r, out, "fuzz")
	})
}

// FuzzRedactJSON redacts arbitrary JSON documents (as drafts would carry).
func FuzzRedactJSON(f *testing.F) {
	f.Add(`{"a":"ghp_0123456789abcdefghijABCDEFGHIJ012345","password":"x","l":[1,"--token","v"]}`)
	f.Add(`{"u":"https://u:p@h/?sig=1","n":1e300,"d":{"e":{"f":{"g":{}}}}}`)
	f.Add(`{"x":"\ud800","y":"a\u0000b"}`)
	r := New(Options{Limits: Limits{Depth: 4, String: 256, Members: 16, Items: 16, Total: 2048}})
	f.Fuzz(func(t *testing.T, in string) {
		v, err := jsonx.Parse([]byte(in), "attrs", jsonx.ParseOptions{KeepInvalidUTF8: true, MaxDepth: 64})
		if err != nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		var sum Summary
		out := r.AppendAttrs(nil, m, nil, &sum)
		if !json.Valid(out) || len(out) > r.lim.Total {
			t.Fatalf("invalid or unbounded output for %q: %q", in, out)
		}
		assertFixedPoint(t, r, out, "fuzz json")
	})
}

// TestSummaryValue: a Summary is a value (copies do not share later
// counts), holds any number of rules and writes them sorted by id.
func TestSummaryValue(t *testing.T) {
	var s Summary
	rs := Rules()
	for i, r := range rs[:20] {
		s.Add(r, i+1)
	}
	c := s
	s.Add(rs[19], 100)
	s.Add(rs[0], 100)
	if c.Of(rs[19]) != 20 || c.Of(rs[0]) != 1 || s.Of(rs[19]) != 120 || s.Of(rs[0]) != 101 {
		t.Errorf("copy shares counts: copy %d/%d, original %d/%d", c.Of(rs[19]), c.Of(rs[0]), s.Of(rs[19]), s.Of(rs[0]))
	}
	if c.Count() != 210 || s.Count() != 410 || len(c.Reasons()) != 20 {
		t.Errorf("counts %d %d, reasons %d", c.Count(), s.Count(), len(c.Reasons()))
	}
	var m Summary
	m.Merge(&c)
	m.Merge(&c)
	if m.Count() != 420 || m.Of(rs[5]) != 12 {
		t.Errorf("merge: %d, %d", m.Count(), m.Of(rs[5]))
	}
	var ids []string
	for id := range c.Reasons() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var want strings.Builder
	want.WriteString(`{"count":210,"reasons":{`)
	for i, id := range ids {
		if i > 0 {
			want.WriteByte(',')
		}
		r, _ := RuleByID(id)
		fmt.Fprintf(&want, "%q:%d", id, c.Of(r))
	}
	want.WriteString("}}")
	if got := string(c.AppendJSON(nil)); got != want.String() {
		t.Errorf("AppendJSON:\n got %s\nwant %s", got, want.String())
	}
}

// FuzzRedactJSONText: a value that is JSON text, an object or array (a
// command's JSON output, a request body, a lockfile), is still valid JSON
// after redaction.
func FuzzRedactJSONText(f *testing.F) {
	f.Add(`{"password": {"a": 1}, "token": [1, 2]}`)
	f.Add(`{"password": 12345678, "secret": true, "api_key": null}`)
	f.Add(`{"auth": "Bearer abcdefghijklmnopqrstuvwxyz", "u": "https://u:p@h/?token=x"}`)
	f.Add(`[{"k": "ghp_0123456789abcdefghijABCDEFGHIJ012345"}, "a\"b\\\\c\u0041"]`)
	f.Add(`{"cmd": "export API_KEY=\"sk-ant-api03-abcdefghijklmnopqrstuvwxyz\" && x"}`)
	f.Add(`{"a":"password=x\"},{\"b\":1"}`)
	f.Add(`{"h": "Authorization: Digest username=\"u\", response=\"6629fae4\"", "c": {"Set-Cookie": "foo=deleted; x=1"}}`)
	r := New(Options{Limits: Limits{String: 1 << 20, Total: 4 << 20}})
	f.Fuzz(func(t *testing.T, in string) {
		if !utf8.ValidString(in) || !jsonLike(in) || !json.Valid([]byte(in)) {
			return
		}
		var sum Summary
		out := r.Text(in, &sum)
		if !json.Valid([]byte(out)) {
			t.Fatalf("valid JSON text became invalid:\n in %s\nout %s", in, out)
		}
	})
}
