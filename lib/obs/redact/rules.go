package redact

import (
	"slices"
	"strconv"
	"sync"
)

// Rule is one reason a value was removed. Its ID is what the redaction
// summary and the in-place markers say. art's own rules (structural bounds,
// secret-named values, URL credentials, headers and a few fast token forms)
// are the constants below; the token rules of gitleaks' default
// configuration follow them, numbered in the order of that configuration,
// and keep gitleaks' ids. A gitleaks rule with the id of an own rule (jwt,
// private-key, github-pat …) shares that Rule, so one id is one Rule.
type Rule uint16

// The rules, in no particular order; the summary sorts by ID.
const (
	// Values whose name says they are secret: a map key, a name=value or
	// name: value pair inside text, or the argument after --name in argv.
	UnsafeKey Rule = iota
	URLCredentials
	URLQuerySecret
	AWSAccessKey
	GitHubPAT
	GitHubOAuth
	GitHubAppToken
	GitHubRefreshToken
	GitLabPAT
	SlackToken
	StripeKey
	GCPAPIKey
	OpenAIKey
	AnthropicKey
	NPMToken
	JWT
	PrivateKey
	AuthHeader
	CurlAuthUser
	RandomToken
	Base64Credentials
	ProviderLayout
	Sensitive
	Binary
	Cycle
	Depth
	Size
	Collection
	UnsupportedType
	NonFinite
	NumberRange
	numOwn
)

var ruleIDs = [numOwn]string{
	UnsafeKey:          "unsafe-key",
	URLCredentials:     "url-credentials",
	URLQuerySecret:     "url-query-secret",
	AWSAccessKey:       "aws-access-key",
	GitHubPAT:          "github-pat",
	GitHubOAuth:        "github-oauth",
	GitHubAppToken:     "github-app-token",
	GitHubRefreshToken: "github-refresh-token",
	GitLabPAT:          "gitlab-pat",
	SlackToken:         "slack-token",
	StripeKey:          "stripe-key",
	GCPAPIKey:          "gcp-api-key",
	OpenAIKey:          "openai-key",
	AnthropicKey:       "anthropic-key",
	NPMToken:           "npm-token",
	JWT:                "jwt",
	PrivateKey:         "private-key",
	AuthHeader:         "auth-header",
	CurlAuthUser:       "curl-auth-user",
	RandomToken:        "random-token",
	Base64Credentials:  "base64-credentials",
	ProviderLayout:     "provider-layout",
	Sensitive:          "sensitive",
	Binary:             "binary",
	Cycle:              "cycle",
	Depth:              "depth",
	Size:               "size",
	Collection:         "collection",
	UnsupportedType:    "unsupported-type",
	NonFinite:          "non-finite",
	NumberRange:        "number-range",
}

// ownDescriptions says what each of art's own rules catches.
var ownDescriptions = [numOwn]string{
	UnsafeKey:          "a value named like a secret: map keys, name=value and name: value in text, and the argument after --name in argv, for names ending in password, passwd, passphrase, secret, token, cookie, credential(s), authorization, auth, session, api key, private key, access key, secret key, client secret, session id …",
	URLCredentials:     "the user:password of scheme://user:password@host, whole, and a user name that is a token (scheme://TOKEN@host)",
	URLQuerySecret:     "secret query parameters in URLs (token, access_token, api_key, password, sig, signature, X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, key …)",
	AWSAccessKey:       "AWS access key ids (AKIA, ASIA, ABIA, ACCA, A3T… followed by 16 characters)",
	GitHubPAT:          "GitHub personal access tokens (ghp_…, github_pat_…)",
	GitHubOAuth:        "GitHub OAuth access tokens (gho_…)",
	GitHubAppToken:     "GitHub App user-to-server and server-to-server tokens (ghu_…, ghs_…)",
	GitHubRefreshToken: "GitHub refresh tokens (ghr_…)",
	GitLabPAT:          "GitLab personal access tokens (glpat-…)",
	SlackToken:         "Slack tokens (xoxb-, xoxa-, xoxp-, xoxr-, xoxs-, xoxe-, xoxo-, xapp-…)",
	StripeKey:          "Stripe secret and restricted keys (sk_live_, rk_live_, sk_test_, rk_test_, sk_prod_…)",
	GCPAPIKey:          "Google API keys (AIza…)",
	OpenAIKey:          "OpenAI keys (sk-proj-, sk-svcacct-, sk-admin-, legacy sk-…T3BlbkFJ…, sk- followed by 32+ characters)",
	AnthropicKey:       "Anthropic keys (sk-ant-…)",
	NPMToken:           "npm access tokens (npm_…)",
	JWT:                "JSON Web Tokens (eyJ….eyJ….…)",
	PrivateKey:         "PEM private key blocks (-----BEGIN … PRIVATE KEY----- to the matching END line)",
	AuthHeader:         "credentials in Authorization/Proxy-Authorization headers (any scheme) and in a bare 'Bearer <token>'",
	CurlAuthUser:       "the user:password given to curl's -u (user) and -U (proxy user) options, long forms too, whole",
	RandomToken:        "a bare string of 16+ characters that looks generated (lower-case letters and digits alternating, high entropy, no English letter pairs); not hex, UUIDs, ULIDs, slugs, integrity hashes or base64 blocks",
	Base64Credentials:  "a bare base64 string (standard or URL alphabet, padded or not) whose text is id:secret, as an HTTP Basic credential or a Docker config's auth entry is: printable, no spaces, an id of letters, digits and ._@+- and a secret of 6+ characters; not a URL",
	ProviderLayout:     "a bare id or key in a provider's fixed layout that has no prefix of its own, standing alone: Sumo Logic access ids (su and 12 letters and digits, both cases and a digit among them), Sidekiq Pro and Enterprise licence credentials (8 hex digits, ':', 8 hex digits, letters and digits in each half), Mailgun API and signing keys (32 hex digits, '-', 8, '-', 8)",
	Sensitive:          "values the Draft names in its sensitive list",
	Binary:             "strings and keys that are not valid UTF-8, and byte slices",
	Cycle:              "a map or slice that contains itself (Go API only)",
	Depth:              "containers nested deeper than the depth limit",
	Size:               "strings cut at the string limit, keys over the key limit, values past the total size limit",
	Collection:         "map members and array items past the collection limits",
	UnsupportedType:    "Go values that are not scalars, maps or slices (structs, pointers, funcs, errors …): never formatted",
	NonFinite:          "NaN and ±Inf floats (Go API only)",
	NumberRange:        "integers beyond ±2^53 from the Go API, written as decimal strings",
}

// maxRules bounds own plus gitleaks rules (a Rule is 16 bits; the bound
// keeps ids and markers a small table).
const maxRules = 4096

// Source names where a rule comes from.
const (
	SourceArt      = "art"
	SourceGitleaks = "gitleaks"
)

// RuleInfo describes one rule for `artobs rules` and the docs.
type RuleInfo struct {
	ID     string
	Source string // SourceArt, SourceGitleaks, or both joined by '+'
	// (an own rule with the id of a gitleaks rule: both apply)
	Version string // the art module or gitleaks module version
	Catches string
	// Provider and Reference: for the provider token formats, whose
	// tokens they are and where the format is described (see
	// providers.go).
	Provider  string
	Reference string
}

// ruleTable is every active rule: art's own, then gitleaks'. It is built
// once, on first use, because compiling gitleaks' regular expressions takes
// tens of milliseconds that commands which never redact should not pay.
type ruleTable struct {
	ids     []string
	info    []RuleInfo
	byID    map[string]Rule
	sorted  []Rule  // by id
	rank    []int32 // Rule → its position in sorted
	markers []string
	leaks   *leakSet
}

var table = sync.OnceValue(loadTable)

func loadTable() *ruleTable {
	t := &ruleTable{byID: map[string]Rule{}}
	for r := range Rule(numOwn) {
		_, _ = t.add(ruleIDs[r], RuleInfo{ID: ruleIDs[r], Source: SourceArt, Version: artVersion(), Catches: ownDescriptions[r]})
	}
	addProviderRules(t)
	t.leaks = loadLeaks(t)
	if len(t.ids) > maxRules {
		panic("redact: " + strconv.Itoa(len(t.ids)) + " rules exceed maxRules; raise it")
	}
	t.sorted = make([]Rule, len(t.ids))
	for i := range t.sorted {
		t.sorted[i] = Rule(i)
	}
	slices.SortFunc(t.sorted, func(a, b Rule) int {
		if t.ids[a] < t.ids[b] {
			return -1
		}
		if t.ids[a] > t.ids[b] {
			return 1
		}
		return 0
	})
	t.rank = make([]int32, len(t.ids))
	for i, r := range t.sorted {
		t.rank[r] = int32(i)
	}
	t.markers = make([]string, len(t.ids))
	for r, id := range t.ids {
		t.markers[r] = "[REDACTED:" + id + "]"
	}
	return t
}

// add registers a rule id, or returns the Rule that already has it (and
// true).
func (t *ruleTable) add(id string, info RuleInfo) (Rule, bool) {
	if r, ok := t.byID[id]; ok {
		return r, true
	}
	r := Rule(len(t.ids))
	t.ids = append(t.ids, id)
	t.info = append(t.info, info)
	t.byID[id] = r
	return r, false
}

// ID is the rule's stable name.
func (r Rule) ID() string {
	if t := table(); int(r) < len(t.ids) {
		return t.ids[r]
	}
	return "rule-" + strconv.Itoa(int(r))
}

// Info describes the rule: id, source, version and what it catches.
func (r Rule) Info() RuleInfo {
	if t := table(); int(r) < len(t.info) {
		return t.info[r]
	}
	return RuleInfo{ID: r.ID()}
}

// Rules lists every active rule.
func Rules() []Rule {
	rs := make([]Rule, len(table().ids))
	for i := range rs {
		rs[i] = Rule(i)
	}
	return rs
}

// RuleIDs lists every rule id, sorted.
func RuleIDs() []string {
	t := table()
	out := make([]string, len(t.sorted))
	for i, r := range t.sorted {
		out[i] = t.ids[r]
	}
	return out
}

// RuleByID finds a rule by its id.
func RuleByID(id string) (Rule, bool) {
	r, ok := table().byID[id]
	return r, ok
}

// Summary counts redactions by rule. It holds counts only, never values.
// It is small (an event names a few rules) and a plain value: the first
// rules sit inline, more go to a slice that is copied, never shared, when
// it changes, so a copy of a Summary never sees the original's later
// counts.
type Summary struct {
	inl   [6]ruleCount
	ninl  uint8
	more  []ruleCount
	total int32
}

type ruleCount struct {
	r Rule
	n int32
}

// Add counts n redactions for r.
func (s *Summary) Add(r Rule, n int) {
	if n <= 0 {
		return
	}
	s.total += int32(n)
	for i := range s.inl[:s.ninl] {
		if s.inl[i].r == r {
			s.inl[i].n += int32(n)
			return
		}
	}
	if s.ninl < uint8(len(s.inl)) && len(s.more) == 0 {
		s.inl[s.ninl] = ruleCount{r, int32(n)}
		s.ninl++
		return
	}
	more := slices.Clone(s.more)
	for i := range more {
		if more[i].r == r {
			more[i].n += int32(n)
			s.more = more
			return
		}
	}
	s.more = append(more, ruleCount{r, int32(n)})
}

// Count is the total number of redactions.
func (s Summary) Count() int { return int(s.total) }

// Of is the count for one rule.
func (s Summary) Of(r Rule) int {
	for _, c := range s.inl[:s.ninl] {
		if c.r == r {
			return int(c.n)
		}
	}
	for _, c := range s.more {
		if c.r == r {
			return int(c.n)
		}
	}
	return 0
}

// counts lists the rules counted, sorted by id.
func (s *Summary) counts() []ruleCount {
	buf := s.inl // a copy: sorting must not reorder s
	out := append(buf[:s.ninl], s.more...)
	t := table()
	slices.SortFunc(out, func(a, b ruleCount) int { return int(t.rank[a.r]) - int(t.rank[b.r]) })
	return out
}

// Reasons returns the non-zero counts keyed by rule id.
func (s Summary) Reasons() map[string]int {
	m := map[string]int{}
	for _, c := range s.counts() {
		m[c.r.ID()] = int(c.n)
	}
	return m
}

// AppendJSON appends the summary as canonical JSON:
// {"count":N,"reasons":{"rule-id":n,…}} with reasons sorted by id.
func (s Summary) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"count":`...)
	dst = strconv.AppendInt(dst, int64(s.total), 10)
	dst = append(dst, `,"reasons":{`...)
	t := table()
	for i, c := range s.counts() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, t.ids[c.r]...)
		dst = append(dst, `":`...)
		dst = strconv.AppendInt(dst, int64(c.n), 10)
	}
	return append(dst, "}}"...)
}

// Merge adds every count of o to s.
func (s *Summary) Merge(o *Summary) {
	for _, c := range o.counts() {
		s.Add(c.r, int(c.n))
	}
}
