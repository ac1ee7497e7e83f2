//go:build race

package redact

// raceEnabled thins the generated gitleaks corpus under -race, where each
// redaction costs ten times as much; every rule and placement still runs.
const raceEnabled = true
