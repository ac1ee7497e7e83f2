#!/usr/bin/env bash
# Recall and false-positive rates of artobs' redaction per placement, with
# gitleaks' own detector on the same drafts beside it. The corpus is made at
# run time from gitleaks' rule set (its regexes through reggen, its detector
# for the secret, its sample lines), so it follows the gitleaks version in
# go.mod. docs/artobs.md records the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -v -run '^TestGitleaksCorpus$' ./lib/obs/redact -args -redact.report |
	grep -v -e '^=== ' -e '^--- ' -e '^PASS$' -e '^ok '
