package redact

import (
	"slices"
	"strconv"
)

// Rule is one reason a value was removed. Its ID is what the redaction
// summary and the in-place markers say; ids follow gitleaks' names where
// gitleaks has a rule for the same thing.
type Rule uint8

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
	Sensitive
	Binary
	Cycle
	Depth
	Size
	Collection
	UnsupportedType
	NonFinite
	NumberRange
	numRules
)

var ruleIDs = [numRules]string{
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

// RuleDescriptions says what each rule catches, for docs and --help.
var RuleDescriptions = [numRules]string{
	UnsafeKey:          "a value named like a secret: map keys, name=value and name: value in text, and the argument after --name in argv, for names ending in password, passwd, passphrase, secret, token, cookie, credential(s), authorization, auth, session, api key, private key, access key, secret key, client secret, session id …",
	URLCredentials:     "the password in scheme://user:password@host",
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

// ID is the rule's stable name.
func (r Rule) ID() string {
	if r < numRules {
		return ruleIDs[r]
	}
	return "rule-" + strconv.Itoa(int(r))
}

// Rules lists every rule.
func Rules() []Rule {
	rs := make([]Rule, numRules)
	for i := range rs {
		rs[i] = Rule(i)
	}
	return rs
}

// RuleIDs lists every rule id, sorted.
func RuleIDs() []string {
	return slices.Clone(sortedIDs[:])
}

// RuleByID finds a rule by its id.
func RuleByID(id string) (Rule, bool) {
	for r, s := range ruleIDs {
		if s == id {
			return Rule(r), true
		}
	}
	return 0, false
}

var (
	sortedIDs   [numRules]string
	sortedRules [numRules]Rule
	markers     [numRules]string
)

func init() {
	copy(sortedIDs[:], ruleIDs[:])
	slices.Sort(sortedIDs[:])
	for i, id := range sortedIDs {
		sortedRules[i], _ = RuleByID(id)
	}
	for r := range markers {
		markers[r] = "[REDACTED:" + ruleIDs[r] + "]"
	}
}

// Summary counts redactions by rule. It holds counts only, never values.
type Summary struct {
	counts [numRules]int
}

// Add counts n redactions for r.
func (s *Summary) Add(r Rule, n int) {
	if r < numRules && n > 0 {
		s.counts[r] += n
	}
}

// Count is the total number of redactions.
func (s Summary) Count() int {
	n := 0
	for _, c := range s.counts {
		n += c
	}
	return n
}

// Of is the count for one rule.
func (s Summary) Of(r Rule) int {
	if r < numRules {
		return s.counts[r]
	}
	return 0
}

// Reasons returns the non-zero counts keyed by rule id.
func (s Summary) Reasons() map[string]int {
	m := map[string]int{}
	for r, c := range s.counts {
		if c > 0 {
			m[ruleIDs[r]] = c
		}
	}
	return m
}

// AppendJSON appends the summary as canonical JSON:
// {"count":N,"reasons":{"rule-id":n,…}} with reasons sorted by id.
func (s Summary) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"count":`...)
	dst = strconv.AppendInt(dst, int64(s.Count()), 10)
	dst = append(dst, `,"reasons":{`...)
	first := true
	for _, r := range sortedRules {
		if c := s.counts[r]; c > 0 {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, '"')
			dst = append(dst, ruleIDs[r]...)
			dst = append(dst, `":`...)
			dst = strconv.AppendInt(dst, int64(c), 10)
		}
	}
	return append(dst, "}}"...)
}

// Merge adds every count of o to s.
func (s *Summary) Merge(o *Summary) {
	for r, c := range o.counts {
		s.counts[r] += c
	}
}
