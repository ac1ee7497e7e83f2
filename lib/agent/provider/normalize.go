package provider

import "regexp"

// volatile matches text that differs between two runs doing the same
// thing: RFC 3339 and log-style timestamps, Go-style durations ("0.123s",
// "1m2.5s", "15ms"), and go test's "(cached)" in place of a duration.
var volatile = regexp.MustCompile(
	`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?` + // 2026-12-01T09:53:00.123Z
		`|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?` + // 2026/12/01 09:53:00 (Go's log)
		`|\b(?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?(?:ns|µs|us|ms|s)\b` + // 0.123s 1m2.5s 15ms
		`|\(cached\)`)

// Normalize masks volatile text in s with "<t>". It only feeds the request
// hash: what the model sees is never changed.
func Normalize(s string) string { return volatile.ReplaceAllString(s, "<t>") }
