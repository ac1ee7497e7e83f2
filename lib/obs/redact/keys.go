package redact

import (
	"bytes"
	"strings"
)

// The key classifier decides whether a name (a map key, the left side of
// name=value in text, a --flag in argv, a URL query parameter) says its value
// is a secret. It splits the name into lower-case words on punctuation and
// camelCase boundaries and looks only at the last one or two words, so
// "github_token", "X-Auth-Token", "clientSecret", "AWS_SECRET_ACCESS_KEY" and
// "set-cookie" are secret while "max_tokens", "token_count", "input_tokens",
// "secret_name", "primary_key" and "public_key" are not: LLM usage counters
// and references to secrets are exactly what events should keep.

// stems is the quick reject: a name containing none of these (in any case)
// cannot be unsafe, which is nearly every name.
var stemBytes = [...][]byte{
	[]byte("pass"), []byte("pwd"), []byte("secret"), []byte("token"), []byte("key"),
	[]byte("auth"), []byte("cookie"), []byte("session"), []byte("cred"),
}

// lastWordSuffixes: the last word ends with one of these.
var lastWordSuffixes = [...]string{
	"password", "passwords", "passwd", "passphrase", "secret", "secrets", "token",
	"cookie", "cookies", "credential", "credentials", "authorization", "apikey",
	"privatekey", "accesskey", "secretkey", "sessionid", "sessionkey",
}

// lastWordExact: the last word is exactly one of these.
var lastWordExact = [...]string{"pwd", "pass", "auth", "session"}

// keyQualifiers: "<qualifier> key" is secret (api_key, private-key, ssh_key).
var keyQualifiers = [...]string{
	"api", "private", "access", "secret", "session", "signing", "encryption",
	"master", "account", "client", "auth", "ssh", "shared", "storage", "deploy",
}

// queryExtra are URL query parameter names that carry secrets without
// saying so in the words above (pre-signed URLs and API keys).
var queryExtra = [...]string{
	"sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
	"x-goog-signature", "x-goog-credential", "key",
}

const maxKeyClassify = 128

// unsafeName reports whether a value named name is a secret.
func unsafeName(name string) bool {
	if len(name) < 3 || len(name) > maxKeyClassify {
		return false
	}
	var lower [maxKeyClassify]byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	l := lower[:len(name)]
	hit := false
	for _, s := range stemBytes {
		if bytes.Contains(l, s) {
			hit = true
			break
		}
	}
	if !hit {
		return false
	}
	last, prev := lastWords(name)
	switch prev {
	case "per", "max", "min", "num":
		return false // bytesPerToken, max_token: a quantity of tokens
	}
	for _, s := range lastWordSuffixes {
		if strings.HasSuffix(last, s) {
			return true
		}
	}
	for _, s := range lastWordExact {
		if last == s {
			return true
		}
	}
	if last == "key" || last == "keys" {
		for _, q := range keyQualifiers {
			if prev == q {
				return true
			}
		}
	}
	if last == "id" && prev == "session" {
		return true
	}
	return false
}

// unsafeQueryName is unsafeName plus the query-only names.
func unsafeQueryName(name string) bool {
	if unsafeName(name) {
		return true
	}
	if len(name) > 32 {
		return false
	}
	for _, q := range queryExtra {
		if strings.EqualFold(name, q) {
			return true
		}
	}
	return false
}

// lastWords returns the last two words of name, lower-cased. Words are
// separated by anything that is not a letter or digit, and by camelCase
// boundaries: "aB" splits before B, and "ABc" splits before B (an acronym
// followed by a word: "APIKey" is "api key").
func lastWords(name string) (last, prev string) {
	end := len(name)
	// Trim trailing separators.
	for end > 0 && !isAlnum(name[end-1]) {
		end--
	}
	w1s := wordStart(name, end)
	last = strings.ToLower(name[w1s:end])
	e2 := w1s
	for e2 > 0 && !isAlnum(name[e2-1]) {
		e2--
	}
	if e2 > 0 {
		prev = strings.ToLower(name[wordStart(name, e2):e2])
	}
	return last, prev
}

// wordStart finds where the word ending at end begins.
func wordStart(s string, end int) int {
	i := end
	for i > 0 {
		c := s[i-1]
		if !isAlnum(c) {
			return i
		}
		if i < end {
			next := s[i]
			// lower→Upper boundary: "tokenX|Y"… split before an upper-case
			// letter that follows a lower-case letter or digit.
			if isUpper(next) && (isLower(c) || isDigit(c)) {
				return i
			}
			// Acronym end: "APIKey": split before 'K' because it is upper,
			// preceded by upper, and followed by lower.
			if isUpper(next) && isUpper(c) && i+1 < end && isLower(s[i+1]) {
				return i
			}
		}
		i--
	}
	return 0
}

func isAlnum(c byte) bool { return isLower(c) || isUpper(c) || isDigit(c) }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
