#!/usr/bin/env bash
# Runs every fuzz target in the module for $1 (default 60s) each. New crashers
# land in the package's testdata/fuzz corpus, where `go test` replays them.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-60s}"
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}' | sort -u); do
		echo "fuzz: $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
	done
done
