package redact

import (
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"
	"sync"
)

// Provider token formats: art's own rules for the token formats providers
// publish, beyond gitleaks' set. Each format is a distinctive prefix (or,
// for a few, a distinctive infix after a fixed-length lead), a fixed
// alphabet and length, and where the provider defines one a built-in
// checksum. Every entry names its provider and where the format is
// described, and `artobs rules` lists both.
//
// Matching: one pass over the bytes. A table keyed by first byte skips
// bytes that cannot start a prefix; a prefix must start a word (the byte
// before it is not a letter or digit), and the format's anchored regular
// expression then confirms the whole token. A token is accepted only if its
// body looks random: it holds a digit, or both cases (a snake_case word
// after "sk_" is a variable name, not a key), and is not a placeholder
// (xxxx…, 0000…). A token whose checksum verifies is accepted glued to
// other text too. The whole token, prefix included, becomes the marker.

// TokenFormat is one provider token format.
type TokenFormat struct {
	ID        string // the rule id (several formats may share one)
	Provider  string
	What      string // what the token is
	Pattern   string // the whole token, a regular expression (RE2)
	Reference string // the provider's page that describes the format
	prefixes  []string
	lead      int // bytes of the token before the prefix (an infix format)
	// leadMin > 0: the lead is digits, leadMin to lead of them (a
	// numeric id before the infix: Telegram's bot id).
	leadMin int
	check   func(tok string) bool
	fix     func(tok string) string
	// re is the anchored Pattern, compiled at the format's first
	// candidate: a process that redacts one draft compiles the few its
	// text triggers, not all of them.
	re func() *regexp.Regexp
}

// Prefixes are the literal strings that trigger the format.
func (f TokenFormat) Prefixes() []string { return f.prefixes }

// Fix turns a string the Pattern matches (as a generator makes it) into a
// valid token of the format: it writes the checksum where the format has
// one, and leaves the string alone otherwise.
func (f TokenFormat) Fix(s string) string {
	if f.fix == nil {
		return s
	}
	return f.fix(s)
}

// Checksum reports whether the format defines a checksum, and whether tok
// carries a valid one.
func (f TokenFormat) Checksum(tok string) (defined, ok bool) {
	if f.check == nil {
		return false, false
	}
	return true, f.check(tok)
}

// TokenFormats lists the provider token formats.
func TokenFormats() []TokenFormat {
	fs := providerSet().formats
	out := make([]TokenFormat, len(fs))
	for i, f := range fs {
		out[i] = *f
	}
	return out
}

// Common bodies.
const (
	b62   = `[A-Za-z0-9]`
	hexl  = `[a-f0-9]`
	hexA  = `[A-Fa-f0-9]`
	urlc  = `[A-Za-z0-9_-]`
	uuidR = `[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}`
)

// fm builds a format whose tokens start with one of the prefixes,
// followed by body (a regular expression).
func fm(id, provider, what, ref string, prefixes []string, body string) *TokenFormat {
	alts := make([]string, len(prefixes))
	for i, p := range prefixes {
		alts[i] = regexp.QuoteMeta(p)
	}
	return &TokenFormat{ID: id, Provider: provider, What: what, Reference: ref, prefixes: prefixes,
		Pattern: `(?:` + strings.Join(alts, "|") + `)(?:` + body + `)`}
}

// infix builds a format identified by an infix after lead bytes of leadRe.
func infix(id, provider, what, ref string, lead int, leadRe string, inf string, body string) *TokenFormat {
	return &TokenFormat{ID: id, Provider: provider, What: what, Reference: ref, prefixes: []string{inf}, lead: lead,
		Pattern: leadRe + regexp.QuoteMeta(inf) + `(?:` + body + `)`}
}

// idInfix builds a format identified by an infix after a numeric id of
// min to max digits.
func idInfix(id, provider, what, ref string, min, max int, inf string, body string) *TokenFormat {
	f := infix(id, provider, what, ref, max, fmt.Sprintf(`[0-9]{%d,%d}`, min, max), inf, body)
	f.leadMin = min
	return f
}

func p(s ...string) []string { return s }

// withCRC marks a GitHub-style format: 30 random base62 characters then the
// CRC32 of them in 6 base62 digits.
func withCRC(f *TokenFormat) *TokenFormat {
	f.check, f.fix = githubChecksumOK, githubChecksumFix
	return f
}

// The references are the providers' documentation pages (titles and URLs);
// formats that are not documented by the provider cite the public page that
// describes them.
const (
	refGitHub    = "GitHub blog, \"Behind GitHub's new authentication token formats\" (https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/)"
	refGitLab    = "GitLab docs, \"GitLab token overview: token prefixes\" (https://docs.gitlab.com/security/tokens/#token-prefixes)"
	refSlack     = "Slack docs, \"Token types\" (https://docs.slack.dev/authentication/tokens)"
	refStripe    = "Stripe docs, \"API keys\" (https://docs.stripe.com/keys)"
	refGoogle    = "Google Identity docs, \"Using OAuth 2.0 to Access Google APIs\" (https://developers.google.com/identity/protocols/oauth2)"
	refDoppler   = "Doppler docs, \"Token formats\" (https://docs.doppler.com/reference/auth-token-formats)"
	refVault     = "HashiCorp Vault docs, \"Tokens: token prefixes\" (https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes)"
	refAtlassian = "Atlassian support, \"Manage API tokens for your Atlassian account\" (https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/)"
	refNewRelic  = "New Relic docs, \"New Relic API keys\" (https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/)"
	refSentry    = "Sentry docs, \"Auth tokens\" (https://docs.sentry.io/account/auth-tokens/)"
	refShopify   = "Shopify dev docs, \"About authentication: access tokens\" (https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens)"
	refGrafana   = "Grafana docs, \"Service accounts\" and \"Cloud access policies\" (https://grafana.com/docs/grafana/latest/administration/service-accounts/)"
)

// formats is the table. Keep it sorted by provider.
func formats() []*TokenFormat {
	return []*TokenFormat{
		fm("1password-service-account-token", "1Password", "service account tokens", "1Password developer docs, \"Service accounts\" (https://developer.1password.com/docs/service-accounts/)", p("ops_eyJ"), `[A-Za-z0-9+/_=-]{100,}`),
		fm("airtable-pat", "Airtable", "personal access tokens", "Airtable developers, \"Personal access tokens\" (https://airtable.com/developers/web/guides/personal-access-tokens)", p("pat"), b62+`{14}\.`+hexl+`{64}`),
		fm("akamai-edgegrid-token", "Akamai", "EdgeGrid client tokens and secrets", "Akamai TechDocs, \"Create authentication credentials\" (https://techdocs.akamai.com/developer/docs/set-up-authentication-credentials)", p("akab-"), `[a-z0-9]{16}-[a-z0-9]{16}`),
		fm("alibaba-access-key-id", "Alibaba Cloud", "AccessKey ids", "Alibaba Cloud docs, \"Create an AccessKey pair\" (https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair)", p("LTAI"), `[A-Za-z0-9]{12,20}`),
		fm("anthropic-key", "Anthropic", "API, admin and OAuth keys", "Anthropic docs, \"API keys\" (https://docs.anthropic.com/en/api/overview#authentication)", p("sk-ant-api03-", "sk-ant-admin01-", "sk-ant-oat01-", "sk-ant-ort01-"), `[A-Za-z0-9_-]{80,}`),
		fm("apify-api-token", "Apify", "API tokens", "Apify docs, \"API integration: API token\" (https://docs.apify.com/platform/integrations/api)", p("apify_api_"), b62+`{36}`),
		fm("artifactory-api-key", "JFrog", "Artifactory API keys", "JFrog docs, \"API keys\" (https://jfrog.com/help/r/jfrog-platform-administration-documentation/api-key)", p("AKCp"), b62+`{69}`),
		fm("artifactory-reference-token", "JFrog", "reference (access) tokens", "JFrog docs, \"Access tokens: reference tokens\" (https://jfrog.com/help/r/jfrog-platform-administration-documentation/access-tokens)", p("cmVmdGtuOjAxOj"), `[A-Za-z0-9+/=]{50}`),
		fm("asana-pat", "Asana", "personal access tokens", "Asana developers, \"Personal access token\" (https://developers.asana.com/docs/personal-access-token)", p("1/", "2/"), `[0-9]{8,20}(?:/[0-9]{8,20})?:[a-f0-9]{32}`),
		fm("atlassian-api-token", "Atlassian", "API tokens (Jira, Confluence, Bitbucket)", refAtlassian, p("ATATT", "ATCTT", "ATSTT"), `[A-Za-z0-9_=-]{150,}`),
		fm("bitbucket-app-password", "Atlassian", "Bitbucket app passwords", "Bitbucket Cloud docs, \"App passwords\" (https://support.atlassian.com/bitbucket-cloud/docs/app-passwords/)", p("ATBB"), b62+`{28,32}`),
		fm("age-secret-key", "age", "age X25519 identities", "age specification, \"X25519 recipient type\" (https://github.com/C2SP/C2SP/blob/main/age.md)", p("AGE-SECRET-KEY-1"), `[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`),
		fm("aws-bedrock-api-key", "AWS", "Amazon Bedrock API keys", "AWS docs, \"Amazon Bedrock API keys\" (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys.html)", p("ABSKQmVkcm9ja0FQSUtleS", "bedrock-api-key-"), `[A-Za-z0-9+/=]{60,}`),
		infix("azure-ad-client-secret", "Microsoft", "Entra ID (Azure AD) client secrets", "Microsoft Learn, \"Add and manage application credentials (client secrets)\" (https://learn.microsoft.com/entra/identity-platform/how-to-add-credentials)", 3, `[A-Za-z0-9_~.]{3}`, "8Q~", `[A-Za-z0-9_~.-]{31,34}`),
		infix("azure-ad-client-secret", "Microsoft", "Entra ID (Azure AD) client secrets (older)", "Microsoft Learn, \"Add and manage application credentials (client secrets)\" (https://learn.microsoft.com/entra/identity-platform/how-to-add-credentials)", 3, `[A-Za-z0-9_~.]{3}`, "7Q~", `[A-Za-z0-9_~.-]{31,34}`),
		fm("base64-jwt", "IETF (JSON Web Token)", "JSON Web Tokens encoded once more in base64 (base64 of \"eyJ…\")", "RFC 7519, \"JSON Web Token (JWT)\" (https://www.rfc-editor.org/rfc/rfc7519)", p("ZXlK"), `[A-Za-z0-9+/_-]{40,}={0,2}`),
		fm("backblaze-application-key", "Backblaze", "B2 application keys", "Backblaze docs, \"Application keys\" (https://www.backblaze.com/docs/cloud-storage-application-keys)", p("K001", "K002", "K003", "K004", "K005"), `[A-Za-z0-9+/]{27}`),
		fm("braintree-access-token", "PayPal Braintree", "access tokens", "Braintree docs, \"Access tokens\" (https://developer.paypal.com/braintree/docs/guides/extend/oauth/access-tokens)", p("access_token$production$", "access_token$sandbox$"), b62+`{16}\$`+hexl+`{32}`),
		fm("browserbase-api-key", "Browserbase", "API keys", "Browserbase docs, \"Authentication\" (https://docs.browserbase.com/reference/api/authentication)", p("bb_live_", "bb_test_"), urlc+`{27,}`),
		fm("buildkite-token", "Buildkite", "API access tokens and cluster tokens", "Buildkite docs, \"Managing API access tokens\" (https://buildkite.com/docs/apis/managing-api-tokens)", p("bkua_", "bkct_"), `[A-Za-z0-9]{40}`),
		fm("cerebras-api-key", "Cerebras", "API keys", "Cerebras inference docs, \"Quickstart\" (https://inference-docs.cerebras.ai/quickstart)", p("csk-"), `[a-z0-9]{40,60}`),
		fm("circleci-token", "CircleCI", "personal and project API tokens", "CircleCI docs, \"Managing API tokens\" (https://circleci.com/docs/managing-api-tokens/)", p("CCIPAT_", "CCIPRJ_"), b62+`{20,24}_`+hexl+`{40}`),
		fm("clickup-api-token", "ClickUp", "personal API tokens", "ClickUp API docs, \"Authentication: personal token\" (https://developer.clickup.com/docs/authentication)", p("pk_"), `[0-9]{4,12}_[A-Z0-9]{32}`),
		fm("clojars-deploy-token", "Clojars", "deploy tokens", "Clojars wiki, \"Deploy tokens\" (https://github.com/clojars/clojars-web/wiki/Deploy-Tokens)", p("CLOJARS_"), hexl+`{60}`),
		fm("cloudflare-api-token", "Cloudflare", "scannable API tokens and keys", "Cloudflare docs, \"API token formats\" (https://developers.cloudflare.com/fundamentals/api/get-started/token-formats/)", p("cfk_", "cfut_", "cfat_"), urlc+`{40,}`),
		fm("cloudflare-origin-ca-key", "Cloudflare", "Origin CA keys", "Cloudflare docs, \"Origin CA keys\" (https://developers.cloudflare.com/fundamentals/api/get-started/ca-keys/)", p("v1.0-"), hexl+`{24}-`+hexl+`{146}`),
		fm("contentful-pat", "Contentful", "content management personal access tokens", "Contentful docs, \"Personal access tokens\" (https://www.contentful.com/developers/docs/references/authentication/#personal-access-tokens)", p("CFPAT-"), urlc+`{43}`),
		fm("crates-io-token", "crates.io", "API tokens", "crates.io docs, \"cargo login\" (https://doc.rust-lang.org/cargo/reference/publishing.html#before-your-first-publish)", p("cio"), b62+`{32}`),
		fm("databricks-token", "Databricks", "personal access tokens and OAuth secrets", "Databricks docs, \"Databricks personal access token authentication\" (https://docs.databricks.com/aws/en/dev-tools/auth/pat)", p("dapi", "dose"), hexl+`{32}(?:-[0-9]{1,2})?`),
		fm("deno-deploy-token", "Deno", "Deno Deploy access tokens", "Deno Deploy docs, \"Access tokens\" (https://docs.deno.com/deploy/manual/api/)", p("ddp_", "ddo_"), b62+`{36}`),
		fm("defined-networking-api-token", "Defined Networking", "Managed Nebula API keys", "Defined Networking docs, \"API keys\" (https://docs.defined.net/guides/automating-host-creation/)", p("dnkey-"), `[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}`),
		fm("docker-config-auths", "Docker", "registry credentials: a base64 Docker config.json ({\"auths\": …}), as in Kubernetes dockerconfigjson secrets", "Docker docs, \"docker login: credential stores\" (https://docs.docker.com/reference/cli/docker/login/)", p("eyJhdXRocyI6", "eyAiYXV0aHMiOi"), `[A-Za-z0-9+/=_-]{20,}`),
		fm("digitalocean-token", "DigitalOcean", "personal access, OAuth and refresh tokens", "DigitalOcean docs, \"How to create a personal access token\" (https://docs.digitalocean.com/reference/api/create-personal-access-token/)", p("dop_v1_", "doo_v1_", "dor_v1_"), hexl+`{64}`),
		fm("discord-bot-token", "Discord", "bot tokens", "Discord developer docs, \"Authentication: bot token\" (https://discord.com/developers/docs/reference#authentication)", p("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"), `[A-Za-z0-9_-]{21,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}`),
		fm("docker-hub-token", "Docker", "Docker Hub personal and organization access tokens", "Docker docs, \"Personal access tokens\" (https://docs.docker.com/security/for-developers/access-tokens/)", p("dckr_pat_", "dckr_oat_"), urlc+`{27,}`),
		fm("doppler-token", "Doppler", "personal, CLI, service, service account, SCIM and audit tokens", refDoppler, p("dp.pt.", "dp.ct.", "dp.st.", "dp.sa.", "dp.scim.", "dp.audit."), `[A-Za-z0-9._-]{40,}`),
		fm("dropbox-access-token", "Dropbox", "short-lived access tokens", "Dropbox developers, \"OAuth guide\" (https://developers.dropbox.com/oauth-guide)", p("sl."), `[A-Za-z0-9._-]{130,}`),
		fm("duffel-api-token", "Duffel", "access tokens", "Duffel docs, \"Authentication\" (https://duffel.com/docs/api/overview/making-requests/authentication)", p("duffel_test_", "duffel_live_"), `[A-Za-z0-9_=-]{43}`),
		fm("dynatrace-token", "Dynatrace", "API and platform tokens", "Dynatrace docs, \"Access tokens: token format\" (https://docs.dynatrace.com/docs/manage/identity-access-management/access-tokens-and-oauth-clients/access-tokens#token-format)", p("dt0c01.", "dt0s01.", "dt0s02.", "dt0s16."), `[A-Z0-9]{24}\.[A-Z0-9]{64}`),
		fm("e2b-api-key", "E2B", "API keys", "E2B docs, \"API key\" (https://e2b.dev/docs/api-key)", p("e2b_"), hexl+`{40}`),
		fm("easypost-api-key", "EasyPost", "production and test API keys", "EasyPost docs, \"Authentication\" (https://docs.easypost.com/docs/authentication)", p("EZAK", "EZTK"), b62+`{54}`),
		fm("sk-underscore-key", "ElevenLabs and others", "sk_ secret keys (ElevenLabs, WorkOS, Clerk, Knock, Checkout.com …)", "ElevenLabs docs, \"Authentication\" (https://elevenlabs.io/docs/api-reference/authentication)", p("sk_"), `[A-Za-z0-9_-]{24,}`),
		idInfix("facebook-app-token", "Meta", "app access tokens and client tokens written app-id|token", "Meta for Developers, \"Access tokens: app access tokens\" (https://developers.facebook.com/docs/facebook-login/guides/access-tokens/#apptokens)", 15, 16, "|", `[A-Za-z0-9_-]{27}(?:[A-Za-z0-9_-]{5})?`),
		fm("facebook-access-token", "Meta", "Facebook and Instagram Graph API access tokens", "Meta for Developers, \"Access tokens\" (https://developers.facebook.com/docs/facebook-login/guides/access-tokens/)", p("EAA", "IGQV"), b62+`{90,}`),
		fm("figma-token", "Figma", "personal access and OAuth refresh tokens", "Figma developers, \"Access tokens\" (https://www.figma.com/developers/api#access-tokens)", p("figd_", "figr_", "figo_", "figu_"), urlc+`{40,}`),
		fm("firebase-cloud-messaging-key", "Google", "Firebase Cloud Messaging legacy server keys", "Firebase docs, \"Server keys\" (https://firebase.google.com/docs/cloud-messaging/auth-server)", p("AAAA"), urlc+`{7}:APA91b`+urlc+`{130,140}`),
		fm("firecrawl-api-key", "Firecrawl", "API keys", "Firecrawl docs, \"Authentication\" (https://docs.firecrawl.dev/api-reference/introduction#authentication)", p("fc-"), hexl+`{32}`),
		fm("flutterwave-secret-key", "Flutterwave", "secret and encryption keys", "Flutterwave docs, \"API keys\" (https://developer.flutterwave.com/docs/integration-guides/authentication)", p("FLWSECK_TEST-", "FLWSECK-"), hexA+`{32}-X`),
		fm("fly-token", "Fly.io", "access tokens (fo1_) and macaroon tokens (fm1r_, fm1a_, fm2_)", "Fly.io docs, \"Access tokens\" (https://fly.io/docs/security/tokens/)", p("fo1_", "fm1r_", "fm1a_", "fm2_"), `[A-Za-z0-9+/_=-]{43,}`),
		fm("frameio-api-token", "Frame.io", "developer tokens", "Frame.io developer docs, \"Authentication\" (https://developer.frame.io/docs/getting-started/authentication)", p("fio-u-"), `[A-Za-z0-9_=-]{64}`),
		withCRC(fm("github-pat", "GitHub", "personal access tokens (classic), with a CRC32 checksum", refGitHub, p("ghp_"), b62+`{36}`)),
		withCRC(fm("github-oauth", "GitHub", "OAuth access tokens, with a CRC32 checksum", refGitHub, p("gho_"), b62+`{36}`)),
		withCRC(fm("github-app-token", "GitHub", "GitHub App user-to-server and installation tokens, with a CRC32 checksum", refGitHub, p("ghu_", "ghs_"), b62+`{36}`)),
		withCRC(fm("github-refresh-token", "GitHub", "refresh tokens, with a CRC32 checksum", refGitHub, p("ghr_"), b62+`{36}`)),
		fm("github-pat", "GitHub", "fine-grained personal access tokens", refGitHub, p("github_pat_"), b62+`{22}_`+b62+`{59}`),
		fm("gitlab-token", "GitLab", "personal, project, group, deploy, runner, CI job, trigger, feed, SCIM, agent, OAuth and feature-flag tokens", refGitLab, p("glpat-", "gldt-", "glrt-", "glrtr-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-", "GR1348941"), `[A-Za-z0-9_.-]{20,}`),
		fm("gocardless-api-token", "GoCardless", "live and sandbox access tokens", "GoCardless docs, \"Authentication\" (https://developer.gocardless.com/api-reference#api-usage-authentication)", p("live_", "sandbox_"), `[A-Za-z0-9_=-]{30,}`),
		fm("google-oauth-client-secret", "Google", "OAuth client secrets", refGoogle, p("GOCSPX-"), urlc+`{28}`),
		fm("google-oauth-access-token", "Google", "OAuth 2.0 access tokens", refGoogle, p("ya29."), `[A-Za-z0-9_.-]{30,}`),
		fm("google-oauth-refresh-token", "Google", "OAuth 2.0 refresh tokens", refGoogle, p("1//"), urlc+`{40,}`),
		fm("grafana-token", "Grafana Labs", "Grafana Cloud access policy tokens and service account tokens", refGrafana, p("glc_", "glsa_"), `[A-Za-z0-9+/_=]{32,}`),
		fm("groq-api-key", "Groq", "API keys", "GroqCloud docs, \"API keys\" (https://console.groq.com/docs/api-keys)", p("gsk_"), b62+`{52}`),
		fm("harness-pat", "Harness", "personal access and service account tokens", "Harness docs, \"Add and manage API keys\" (https://developer.harness.io/docs/platform/automation/api/add-and-manage-api-keys)", p("pat.", "sat."), urlc+`{22}\.`+hexl+`{24}\.`+b62+`{20}`),
		fm("helicone-api-key", "Helicone", "API keys", "Helicone docs, \"API keys\" (https://docs.helicone.ai/getting-started/quick-start)", p("sk-helicone-"), `[a-z0-9]{7}-[a-z0-9]{7}-[a-z0-9]{7}-[a-z0-9]{7}`),
		fm("heroku-api-key", "Heroku", "API keys and OAuth tokens", "Heroku Dev Center, \"Heroku API tokens\" (https://devcenter.heroku.com/articles/authentication)", p("HRKU-"), `[A-Za-z0-9_-]{36,60}`),
		fm("honeybadger-token", "Honeybadger", "personal auth tokens", "Honeybadger docs, \"Data API\" (https://docs.honeybadger.io/api/)", p("hbp_"), b62+`{36}`),
		fm("honeycomb-api-key", "Honeycomb", "ingest keys", "Honeycomb docs, \"API keys\" (https://docs.honeycomb.io/get-started/configure/environments/manage-api-keys/)", p("hcaik_", "hcxik_", "hcamk_", "hcxmk_"), b62+`{52,60}`),
		fm("hubspot-private-app-token", "HubSpot", "private app access tokens", "HubSpot developers, \"Private apps\" (https://developers.hubspot.com/docs/api/private-apps)", p("pat-na1-", "pat-na2-", "pat-eu1-", "pat-ap1-"), uuidR),
		fm("huggingface-token", "Hugging Face", "user access and organization tokens", "Hugging Face docs, \"User access tokens\" (https://huggingface.co/docs/hub/security-tokens)", p("hf_", "api_org_"), `[A-Za-z]{34}`),
		fm("infracost-api-key", "Infracost", "API keys", "Infracost docs, \"Get API key\" (https://www.infracost.io/docs/)", p("ico-"), b62+`{32}`),
		fm("intercom-access-token", "Intercom", "access tokens (base64 of \"tok:\" and a UUID)", "Intercom developers, \"Authentication\" (https://developers.intercom.com/building-apps/docs/authentication-types)", p("dG9rOj"), `[A-Za-z0-9+/=]{50,60}`),
		fm("jina-api-key", "Jina AI", "API keys", "Jina AI docs (https://jina.ai/api-dashboard/)", p("jina_"), `[A-Za-z0-9_-]{60}`),
		fm("jumpcloud-api-key", "JumpCloud", "API keys", "JumpCloud docs, \"JumpCloud APIs\" (https://docs.jumpcloud.com/api/)", p("jca_"), b62+`{36}`),
		fm("langsmith-api-key", "LangChain", "LangSmith personal and service keys", "LangSmith docs, \"Create an API key\" (https://docs.smith.langchain.com/administration/how_to_guides/organization_management/create_account_api_key)", p("lsv2_pt_", "lsv2_sk_"), hexl+`{32}_`+hexl+`{10}`),
		fm("langfuse-secret-key", "Langfuse", "secret keys", "Langfuse docs, \"API keys\" (https://langfuse.com/docs/api)", p("sk-lf-"), uuidR),
		fm("launchdarkly-token", "LaunchDarkly", "API access tokens and SDK keys", "LaunchDarkly docs, \"API access tokens\" and \"Keys\" (https://docs.launchdarkly.com/home/account/api)", p("api-", "sdk-"), uuidR),
		fm("linear-api-key", "Linear", "personal API keys and OAuth tokens", "Linear developers, \"API and webhooks: authentication\" (https://linear.app/developers/graphql#authentication)", p("lin_api_", "lin_oauth_"), b62+`{40,64}`),
		fm("llamacloud-api-key", "LlamaIndex", "LlamaCloud API keys", "LlamaCloud docs, \"API keys\" (https://docs.cloud.llamaindex.ai/api_key)", p("llx-"), b62+`{48}`),
		fm("lob-api-key", "Lob and others", "live_/test_ secret keys (Lob, Mollie …)", "Lob docs, \"Authentication\" (https://docs.lob.com/#tag/Authentication)", p("live_", "test_"), `[a-f0-9]{35}|[A-Za-z0-9]{30}`),
		infix("mailchimp-api-key", "Mailchimp", "Marketing API keys (the data-centre suffix)", "Mailchimp developer docs, \"Marketing API: quick start\" (https://mailchimp.com/developer/marketing/guides/quick-start/)", 32, hexl+`{32}`, "-us", `[0-9]{1,2}`),
		fm("mailersend-api-token", "MailerSend", "API tokens", "MailerSend developers, \"Authentication\" (https://developers.mailersend.com/general.html#authentication)", p("mlsn."), hexl+`{64}`),
		fm("mailgun-api-key", "Mailgun", "private API keys (legacy form)", "Mailgun docs, \"API keys\" (https://documentation.mailgun.com/docs/mailgun/user-manual/get-started/#primary-account-api-key)", p("key-"), hexl+`{32}`),
		fm("mandrill-api-key", "Mailchimp Transactional", "Mandrill API keys", "Mailchimp Transactional docs, \"Authentication\" (https://mailchimp.com/developer/transactional/guides/quick-start/)", p("md-"), urlc+`{22}`),
		fm("mapbox-token", "Mapbox", "secret, public and temporary access tokens", "Mapbox docs, \"Access tokens\" (https://docs.mapbox.com/accounts/guides/tokens/)", p("sk.", "pk.", "tk."), urlc+`{20,}\.`+urlc+`{20,}`),
		fm("microsoft-teams-webhook-url", "Microsoft", "Teams incoming webhook URLs (the URL is the credential)", "Microsoft Learn, \"Create an Incoming Webhook\" (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook)", p("https://"), `(?:[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2/|outlook\.office\.com/webhook/)[A-Za-z0-9@/_.-]{40,}`),
		fm("modal-token", "Modal", "token ids and secrets", "Modal docs, \"modal token\" (https://modal.com/docs/reference/cli/token)", p("ak-", "as-"), b62+`{22}`),
		fm("neon-api-key", "Neon", "API keys", "Neon docs, \"Manage API keys\" (https://neon.com/docs/manage/api-keys)", p("napi_"), b62+`{64}`),
		fm("netlify-token", "Netlify", "personal access and OAuth tokens", "Netlify docs, \"Get started with the Netlify API: authentication\" (https://docs.netlify.com/api/get-started/#authentication)", p("nfp_", "nfc_", "nfo_", "nfu_"), b62+`{36,40}`),
		fm("new-relic-key", "New Relic", "user, admin, insert, query, REST and browser keys", refNewRelic, p("NRAK-", "NRAA-", "NRII-", "NRIQ-", "NRRA-", "NRJS-"), `[A-Za-z0-9_-]{19,40}`),
		infix("new-relic-license-key", "New Relic", "license (ingest) keys", refNewRelic, 36, hexl+`{36}`, "NRAL", ``),
		fm("notion-token", "Notion", "integration tokens", "Notion developers, \"Authorization\" (https://developers.notion.com/docs/authorization)", p("ntn_", "secret_"), b62+`{40,50}`),
		fm("npm-token", "npm", "access tokens", "npm docs, \"About access tokens\" (https://docs.npmjs.com/about-access-tokens)", p("npm_"), b62+`{36}`),
		fm("nuget-api-key", "NuGet", "nuget.org API keys", "Microsoft Learn, \"Scoped API keys\" (https://learn.microsoft.com/nuget/nuget-org/scoped-api-keys)", p("oy2"), `[a-z0-9]{43}`),
		fm("nvidia-api-key", "NVIDIA", "NGC and build.nvidia.com API keys", "NVIDIA NGC docs, \"Generating your NGC API key\" (https://docs.nvidia.com/ngc/gpu-cloud/ngc-user-guide/index.html#generating-api-key)", p("nvapi-"), urlc+`{64}`),
		fm("octopus-deploy-api-key", "Octopus Deploy", "API keys", "Octopus docs, \"How to create an API key\" (https://octopus.com/docs/octopus-rest-api/how-to-create-an-api-key)", p("API-"), `[A-Z0-9]{26,32}`),
		fm("okta-api-token", "Okta", "API (SSWS) tokens", "Okta developer docs, \"Create an API token\" (https://developer.okta.com/docs/guides/create-an-api-token/main/)", p("00"), `[A-Za-z0-9_=-]{40}`),
		fm("openai-key", "OpenAI", "project, service account, admin and legacy user keys", "OpenAI docs, \"API keys\" (https://platform.openai.com/docs/api-reference/authentication)", p("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"), urlc+`{40,}`),
		fm("openrouter-api-key", "OpenRouter", "API keys", "OpenRouter docs, \"Authentication\" (https://openrouter.ai/docs/api-reference/authentication)", p("sk-or-v1-"), hexl+`{64}`),
		fm("perplexity-api-key", "Perplexity", "API keys", "Perplexity docs, \"API key management\" (https://docs.perplexity.ai/guides/getting-started)", p("pplx-"), b62+`{48}`),
		fm("pinecone-api-key", "Pinecone", "API keys", "Pinecone docs, \"Authentication\" (https://docs.pinecone.io/guides/projects/manage-api-keys)", p("pcsk_"), `[A-Za-z0-9_]{50,}`),
		fm("planetscale-token", "PlanetScale", "service tokens, passwords and OAuth tokens", "PlanetScale docs, \"Service tokens\" (https://planetscale.com/docs/concepts/service-tokens)", p("pscale_tkn_", "pscale_pw_", "pscale_oauth_"), `[A-Za-z0-9_=.-]{32,64}`),
		fm("plaid-access-token", "Plaid", "access tokens", "Plaid docs, \"Tokens: access_token\" (https://plaid.com/docs/api/tokens/)", p("access-sandbox-", "access-development-", "access-production-"), uuidR),
		fm("postman-api-key", "Postman", "API keys and collection access keys", "Postman docs, \"Generate a Postman API key\" (https://learning.postman.com/docs/developer/postman-api/authentication/)", p("PMAK-", "PMAT-"), hexl+`{24}-`+hexl+`{34}`),
		fm("posthog-key", "PostHog", "personal API keys and project API keys", "PostHog docs, \"API overview: authentication\" (https://posthog.com/docs/api)", p("phx_", "phc_", "phs_"), b62+`{40,50}`),
		fm("prefect-api-key", "Prefect", "Prefect Cloud API keys", "Prefect docs, \"Manage API keys\" (https://docs.prefect.io/v3/manage/cloud/manage-users/api-keys)", p("pnu_", "pnb_"), b62+`{36}`),
		fm("pulumi-access-token", "Pulumi", "access tokens", "Pulumi docs, \"Access tokens\" (https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/)", p("pul-"), hexl+`{40}`),
		fm("pypi-token", "PyPI", "PyPI and TestPyPI API tokens (macaroons)", "PyPI help, \"API tokens\" (https://pypi.org/help/#apitoken)", p("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"), urlc+`{50,}`),
		fm("razorpay-key", "Razorpay", "API key ids", "Razorpay docs, \"Generate API keys\" (https://razorpay.com/docs/payments/dashboard/account-settings/api-keys/)", p("rzp_live_", "rzp_test_"), b62+`{14}`),
		fm("readme-api-key", "ReadMe", "API keys", "ReadMe docs, \"Authentication\" (https://docs.readme.com/main/reference/intro/authentication)", p("rdme_"), `[a-z0-9]{70}`),
		fm("render-api-key", "Render", "API keys", "Render docs, \"API keys\" (https://render.com/docs/api#1-create-an-api-key)", p("rnd_"), b62+`{32}`),
		fm("replicate-api-token", "Replicate", "API tokens", "Replicate docs, \"Authentication\" (https://replicate.com/docs/reference/http#authentication)", p("r8_"), b62+`{37}`),
		fm("resend-api-key", "Resend", "API keys", "Resend docs, \"API keys\" (https://resend.com/docs/dashboard/api-keys/introduction)", p("re_"), `[A-Za-z0-9_]{30,40}`),
		fm("rubygems-api-key", "RubyGems", "API keys", "RubyGems guides, \"API key scopes\" (https://guides.rubygems.org/api-key-scopes/)", p("rubygems_"), hexl+`{48}`),
		fm("scalingo-api-token", "Scalingo", "API tokens", "Scalingo docs, \"API tokens\" (https://doc.scalingo.com/platform/cli/api-token)", p("tk-us-"), urlc+`{48}`),
		fm("scaleway-access-key", "Scaleway", "API access key ids", "Scaleway docs, \"How to create API keys\" (https://www.scaleway.com/en/docs/iam/how-to/create-api-keys/)", p("SCW"), `[A-Z0-9]{17}`),
		fm("sendgrid-api-key", "Twilio SendGrid", "API keys", "SendGrid docs, \"API keys\" (https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys)", p("SG."), urlc+`{22}\.`+urlc+`{43}`),
		fm("sendinblue-api-key", "Brevo", "API and SMTP keys", "Brevo developers, \"Authentication\" (https://developers.brevo.com/docs/getting-started)", p("xkeysib-", "xsmtpsib-"), hexl+`{64}-`+b62+`{16}`),
		fm("sentry-token", "Sentry", "organization and user auth tokens", refSentry, p("sntrys_", "sntryu_", "sntrya_"), `[A-Za-z0-9+/_=]{60,}`),
		fm("shippo-api-token", "Shippo", "live and test API tokens", "Shippo docs, \"Authentication\" (https://docs.goshippo.com/docs/guides_general/authentication/)", p("shippo_live_", "shippo_test_"), hexl+`{40}`),
		fm("shopify-token", "Shopify", "admin API, custom app, private app and shared secrets", refShopify, p("shpat_", "shpca_", "shppa_", "shpss_", "shpua_", "shpch_"), hexA+`{32}`),
		fm("sidekiq-credentials-url", "Contributed Systems", "Sidekiq Pro/Enterprise gem server URLs (user and password are the licence credential)", "Sidekiq wiki, \"Sidekiq Pro/Enterprise: installation\" (https://github.com/sidekiq/sidekiq/wiki/Pro-Installation)", p("https://", "http://"), `[A-Za-z0-9]{8}:[A-Za-z0-9]{8}@(?:gems|enterprise)\.contribsys\.com`),
		fm("slack-token", "Slack", "bot, user, app-level, configuration and refresh tokens", refSlack, p("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xoxe.xoxp-", "xoxe.xoxb-", "xapp-"), `[A-Za-z0-9-]{20,}`),
		fm("sonarqube-token", "SonarSource", "SonarQube user, project and global analysis tokens", "SonarQube docs, \"Managing your tokens\" (https://docs.sonarsource.com/sonarqube-server/latest/user-guide/managing-tokens/)", p("squ_", "sqp_", "sqa_"), b62+`{40}`),
		fm("sourcegraph-token", "Sourcegraph", "access tokens", "Sourcegraph docs, \"Access tokens\" (https://sourcegraph.com/docs/cli/how-tos/creating_an_access_token)", p("sgp_"), `(?:[a-f0-9]{16}_|local_)?`+hexl+`{40}`),
		fm("square-token", "Square", "access tokens and OAuth secrets", "Square developer docs, \"Access tokens\" (https://developer.squareup.com/docs/build-basics/access-tokens)", p("EAAA", "sq0atp-", "sq0csp-"), urlc+`{22,60}`),
		fm("statsig-server-secret", "Statsig", "server secret keys", "Statsig docs, \"API keys\" (https://docs.statsig.com/guides/first-device-level-experiment)", p("secret-"), b62+`{43}`),
		fm("stripe-key", "Stripe", "secret, restricted and webhook signing keys", refStripe, p("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"), b62+`{24,}`),
		fm("stytch-secret", "Stytch", "project secrets", "Stytch docs, \"API keys\" (https://stytch.com/docs/home#api-keys)", p("secret-live-", "secret-test-"), urlc+`{36}`),
		fm("supabase-key", "Supabase", "personal access tokens and secret keys", "Supabase docs, \"Understanding API keys\" (https://supabase.com/docs/guides/api/api-keys)", p("sbp_", "sb_secret_"), `[A-Za-z0-9_-]{31,40}`),
		fm("tailscale-key", "Tailscale", "auth keys, API access tokens, OAuth client secrets, webhook secrets", "Tailscale docs, \"Key prefixes\" (https://tailscale.com/kb/1277/key-prefixes)", p("tskey-"), `(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{8,}-[A-Za-z0-9]{20,}`),
		fm("tavily-api-key", "Tavily", "API keys", "Tavily docs, \"Authentication\" (https://docs.tavily.com/documentation/api-reference/introduction)", p("tvly-"), `(?:dev-|prod-)?`+b62+`{32}`),
		infix("terraform-cloud-token", "HashiCorp", "HCP Terraform / Terraform Enterprise API tokens", "HashiCorp docs, \"API tokens\" (https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens)", 14, b62+`{14}`, ".atlasv1.", `[A-Za-z0-9=_-]{60,70}`),
		fm("lob-publishable-key", "Lob", "publishable API keys", "Lob docs, \"Authentication\" (https://docs.lob.com/#tag/Authentication)", p("test_pub_", "live_pub_"), hexl+`{31}`),
		fm("mailgun-public-key", "Mailgun", "public validation keys", "Mailgun docs, \"API keys\" (https://documentation.mailgun.com/docs/mailgun/user-manual/get-started/#primary-account-api-key)", p("pubkey-"), hexl+`{32}`),
		idInfix("telegram-bot-token", "Telegram", "Bot API tokens", "Telegram Bot API, \"Authorizing your bot\" (https://core.telegram.org/bots/api#authorizing-your-bot)", 8, 10, ":", `[A-Za-z0-9_-]{35}`),
		idInfix("telegram-bot-token", "Telegram", "Bot API tokens (bot ids of 5 to 16 digits; the secret starts with A)", "Telegram Bot API, \"Authorizing your bot\" (https://core.telegram.org/bots/api#authorizing-your-bot)", 5, 16, ":", `A[A-Za-z0-9_-]{34}`),
		fm("tencent-secret-id", "Tencent Cloud", "API SecretIds", "Tencent Cloud docs, \"API key management\" (https://www.tencentcloud.com/document/product/598/34228)", p("AKID"), b62+`{32}`),
		fm("together-api-key", "Together AI", "API keys", "Together docs, \"Authentication\" (https://docs.together.ai/reference/authentication-1)", p("tgp_v1_"), urlc+`{40,}`),
		fm("twilio-api-key", "Twilio", "API key SIDs", "Twilio docs, \"API keys\" (https://www.twilio.com/docs/iam/api-keys)", p("SK"), hexl+`{32}`),
		fm("twitter-bearer-token", "X (Twitter)", "app-only bearer tokens", "X developer docs, \"OAuth 2.0 bearer token\" (https://docs.x.com/resources/fundamentals/authentication/oauth-2-0/bearer-tokens)", p("AAAAAAAAAAAAAAAAAAAAA"), `[A-Za-z0-9%]{60,}`),
		fm("typeform-token", "Typeform", "personal access tokens", "Typeform developers, \"Personal access token\" (https://www.typeform.com/developers/get-started/personal-access-token/)", p("tfp_"), `[A-Za-z0-9_.=-]{59}`),
		fm("vault-token", "HashiCorp", "Vault service, batch and recovery tokens", refVault, p("hvs.", "hvb.", "hvr."), `[A-Za-z0-9_-]{24,}`),
		fm("vercel-token", "Vercel", "personal, integration, app, refresh and AI Gateway tokens", "Vercel docs, \"Access tokens\" (https://vercel.com/docs/rest-api/reference/welcome#authentication)", p("vcp_", "vci_", "vca_", "vcr_", "vck_"), b62+`{24,}`),
		fm("voyage-api-key", "Voyage AI", "API keys", "Voyage AI docs, \"API key and Python client\" (https://docs.voyageai.com/docs/api-key-and-installation)", p("pa-"), urlc+`{43}`),
		fm("wix-api-key", "Wix", "API keys", "Wix developers, \"API keys\" (https://dev.wix.com/docs/go-headless/develop-your-project/admin-operations/make-api-calls-with-an-api-key)", p("IST."), urlc+`{20,}\.`+urlc+`{20,}\.`+urlc+`{20,}`),
		fm("xai-api-key", "xAI", "API keys", "xAI docs, \"Authentication\" (https://docs.x.ai/docs/api-reference#authentication)", p("xai-"), b62+`{80}`),
		fm("yandex-cloud-token", "Yandex Cloud", "API keys and IAM tokens", "Yandex Cloud docs, \"API key\" and \"IAM token\" (https://yandex.cloud/en/docs/iam/concepts/authorization/api-key)", p("AQVN", "t1.", "YC"), `[A-Za-z0-9_.=-]{38,}`),
		fm("zoho-token", "Zoho", "OAuth access and refresh tokens", "Zoho API docs, \"OAuth 2.0\" (https://www.zoho.com/crm/developer/docs/api/v8/oauth-overview.html)", p("1000."), hexl+`{32}\.`+hexl+`{32}`),
		fm("zuplo-api-key", "Zuplo", "API keys", "Zuplo docs, \"API key management\" (https://zuplo.com/docs/articles/api-key-management)", p("zpka_"), `[A-Za-z0-9_]{32,}`),
	}
}

// providers is the compiled table.
type providers struct {
	formats []*TokenFormat
	byte1   [256][]int16 // first byte of a prefix → formats, longest prefix first
	// glued: first byte → the formats that may start inside a word (an
	// infix, or a checksum that vouches for the token).
	glued [256][]int16
	// pair: the first two bytes of some prefix (a one-byte prefix sets
	// every pair it starts), a cheap reject before the lists.
	pair [1 << 16]bool
}

var providerSet = sync.OnceValue(func() *providers {
	ps := &providers{formats: formats()}
	type trig struct {
		f int16
		p string
	}
	var ts [256][]trig
	for i, f := range ps.formats {
		pattern := `^(?:` + f.Pattern + `)`
		f.re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
		for _, pre := range f.prefixes {
			ts[pre[0]] = append(ts[pre[0]], trig{int16(i), pre})
			if len(pre) == 1 {
				for c := range 256 {
					ps.pair[int(pre[0])<<8|c] = true
				}
			} else {
				ps.pair[int(pre[0])<<8|int(pre[1])] = true
			}
		}
	}
	for c := range ts {
		// Longest prefix first: "sk_live_" is Stripe before "sk_" is
		// anyone's.
		list := ts[c]
		for a := 1; a < len(list); a++ {
			for b := a; b > 0 && len(list[b].p) > len(list[b-1].p); b-- {
				list[b], list[b-1] = list[b-1], list[b]
			}
		}
		for _, t := range list {
			if !containsInt16(ps.byte1[c], t.f) {
				ps.byte1[c] = append(ps.byte1[c], t.f)
				if f := ps.formats[t.f]; f.lead > 0 || f.check != nil {
					ps.glued[c] = append(ps.glued[c], t.f)
				}
			}
		}
	}
	return ps
})

func containsInt16(s []int16, v int16) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// addProviderRules registers the formats' rule ids. An id that is already
// an own rule (github-pat …) keeps its rule and gains the provider and the
// reference.
func addProviderRules(t *ruleTable) {
	ps := providerSet()
	seen := map[string]bool{}
	for _, f := range ps.formats {
		r, existed := t.add(f.ID, RuleInfo{ID: f.ID, Source: SourceArt, Version: artVersion(),
			Catches: f.Provider + " " + f.What, Provider: f.Provider, Reference: f.Reference})
		in := &t.info[r]
		switch {
		case existed && !seen[f.ID] && in.Provider == "":
			in.Provider, in.Reference = f.Provider, f.Reference
		case seen[f.ID]:
			if !strings.Contains(in.Catches, f.What) {
				in.Catches += "; " + f.What
			}
			if !strings.Contains(in.Reference, f.Reference) {
				in.Reference += "; " + f.Reference
			}
		}
		seen[f.ID] = true
	}
}

// providerTokenChar are the bytes a provider token can hold.
var providerTokenChar = makeClass("_-.+/=~:$%!", true)

// providerSpans appends the spans of provider tokens in s.
func providerSpans(s string, sp []span) []span {
	ps := providerSet()
	t := table()
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '[' {
			i = pastMarker(s, i)
			continue
		}
		fs := ps.byte1[c]
		if fs == nil || i+1 >= len(s) || !ps.pair[int(c)<<8|int(s[i+1])] {
			continue
		}
		atWord := i == 0 || !alnum[s[i-1]]
		if !atWord {
			fs = ps.glued[c] // inside a word: only infixes and checksummed tokens
		}
		for _, fi := range fs {
			f := ps.formats[fi]
			if !prefixAny(s, i, f.prefixes) {
				continue
			}
			a := i - f.lead
			if f.leadMin > 0 {
				a = i
				for a > 0 && i-a < f.lead && isDigit(s[a-1]) {
					a--
				}
				if i-a < f.leadMin {
					continue
				}
			}
			if a < 0 || (f.lead > 0 && !leadOK(s, a, i)) {
				continue
			}
			m := f.re().FindStringIndex(s[a:])
			if m == nil {
				continue
			}
			b := a + m[1]
			tok := s[a:b]
			strong := f.check != nil && f.check(tok)
			wordStart := a == 0 || !alnum[s[a-1]]
			if f.lead == 0 {
				wordStart = atWord
			}
			// The token must end a word too, or the match is the start of
			// something longer that is not this format ("SK" + 32 hex
			// inside a longer hex run).
			wordEnd := b == len(s) || !alnum[s[b]]
			body := tok[:i-a] + tok[i-a+prefixLen(s, i, f.prefixes):]
			if !strong && (!wordStart || !wordEnd || !randomBody(body) || inBase64Line(s, a, b)) {
				continue
			}
			// Whole token: the run of token characters the format's match
			// ends inside goes too.
			for b < len(s) && alnumUnder[s[b]] {
				b++
			}
			sp = append(sp, span{a: a, b: b, rule: t.byID[f.ID]})
			i = b - 1
			break
		}
	}
	return sp
}

func prefixAny(s string, i int, ps []string) bool { return prefixLen(s, i, ps) > 0 }

func prefixLen(s string, i int, ps []string) int {
	for _, p := range ps {
		if prefixAt(s, i, p) {
			return len(p)
		}
	}
	return 0
}

// leadOK: the lead of an infix format starts a word.
func leadOK(s string, a, i int) bool {
	if a > 0 && alnum[s[a-1]] {
		return false
	}
	for k := a; k < i; k++ {
		if !providerTokenChar[s[k]] {
			return false
		}
	}
	return true
}

// randomBody reports whether the part of a token after its prefix looks
// generated rather than written: it holds a digit, or upper and lower case
// letters, and is not a run of one repeated character (xxxx…, 0000…). A
// variable such as sk_live_publishable_key_name is then not a key.
func randomBody(b string) bool {
	if b == "" {
		return true // an infix format's whole token is its lead
	}
	var digit, upper, lower bool
	same := true
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case isDigit(c):
			digit = true
		case isUpper(c):
			upper = true
		case isLower(c):
			lower = true
		}
		if c != b[0] && alnum[c] {
			same = false
		}
	}
	if (same && len(b) >= 6) || placeholderWord(b) || snakeWords(b) >= 3 {
		return false
	}
	return digit || (upper && lower)
}

// snakeWords counts the '_'-separated parts of b that are lower-case
// words of two letters or more: three of them are a snake_case name
// (too_few_live_replicas_for_…, a generated table of error names), which a
// random body holds hardly ever.
func snakeWords(b string) int {
	n := 0
	for _, p := range strings.Split(b, "_") {
		if len(p) >= 2 && strings.Trim(p, "abcdefghijklmnopqrstuvwxyz") == "" {
			n++
		}
	}
	return n
}

// inBase64Line: the token s[a:b] sits between base64's '+' and '/' (one
// of them a '+'), which its format's alphabet does not hold: a piece of an
// encoded blob (a certificate or key file line, "…iC+YCWLB…+nIe…"), not a
// token. A URL path puts '/' around a token, not '+'.
func inBase64Line(s string, a, b int) bool {
	if a == 0 || b >= len(s) {
		return false
	}
	l, r := s[a-1], s[b]
	return (l == '+' || l == '/') && (r == '+' || r == '/') && (l == '+' || r == '+')
}

// GitHub's checksum: the last six characters of a token are the CRC32 of
// the 30 random characters before them, in base62, zero-padded.
const base62Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func base62CRC(s string) string {
	n := crc32.ChecksumIEEE([]byte(s))
	var b [6]byte
	for i := 5; i >= 0; i-- {
		b[i] = base62Digits[n%62]
		n /= 62
	}
	return string(b[:])
}

func githubChecksumOK(tok string) bool {
	if len(tok) != 40 || tok[3] != '_' {
		return false
	}
	return base62CRC(tok[4:34]) == tok[34:]
}

func githubChecksumFix(tok string) string {
	if len(tok) != 40 {
		return tok
	}
	return tok[:34] + base62CRC(tok[4:34])
}
