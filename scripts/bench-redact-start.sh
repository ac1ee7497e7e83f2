#!/usr/bin/env bash
# Start-up cost of the redaction rules, against a baseline build: the wall
# time of `artobs redact` on one Draft (a fresh process each time, so the
# rule table is built cold), binary sizes, and the package inits of
# artexec (GODEBUG=inittrace=1; `artexec run` runs the same inits).
# Interleaved rounds, medians.
#
#   scripts/bench-redact-start.sh [rounds] [baseline-ref]
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
rounds="${1:-9}"
base="${2:-$(git merge-base HEAD main 2>/dev/null || git rev-parse HEAD~1)}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

git archive --format=tar "$base" | tar -x -C "$tmp" --one-top-level=src
(cd "$tmp/src" && go build -o "$tmp/base/" ./cmd/artobs ./cmd/artexec)
go build -o "$tmp/new/" ./cmd/artobs ./cmd/artexec
printf '%s\n' '{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"task/1","type":"task.output","attrs":{"out":"upload with ghp_R2cLqX9wZk3VbN7mT4yH8sJ1fD6gA0eP5uIo done","cmd":"curl -H \"X-Api-Key: 1f2e3d4c5b6a79880716253443526170\" https://api.example.com/"}}' >"$tmp/draft.jsonl"

echo "bench-redact-start: $(go version), load $(cut -d' ' -f1-3 /proc/loadavg), baseline $(git rev-parse --short "$base"), $rounds rounds of 20 runs"
for which in base new; do
	printf '%-5s artobs %6.1f MB  artexec %6.1f MB  artexec package inits %s\n' "$which" \
		"$(echo "$(stat -c %s "$tmp/$which/artobs") / 1048576" | bc -l)" \
		"$(echo "$(stat -c %s "$tmp/$which/artexec") / 1048576" | bc -l)" \
		"$(GODEBUG=inittrace=1 "$tmp/$which/artexec" --help 2>&1 >/dev/null | grep -c '^init ')"
done
# Wall and CPU (user+sys) time of 20 runs, per run; CPU time is the
# steadier figure on a loaded machine.
TIMEFORMAT='%R %U %S'
for r in $(seq "$rounds"); do
	for which in base new; do
		t=$({ time (for _ in $(seq 20); do "$tmp/$which/artobs" redact <"$tmp/draft.jsonl" >/dev/null; done); } 2>&1)
		echo "$which $t"
	done
done >"$tmp/times"
for which in base new; do
	grep "^$which " "$tmp/times" | awk '{ printf "%f %f\n", $2 * 50, ($3 + $4) * 50 }' >"$tmp/$which.ms"
	wall=$(cut -d' ' -f1 "$tmp/$which.ms" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	cpu=$(cut -d' ' -f2 "$tmp/$which.ms" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	printf '%-5s artobs redact, one draft, cold process: median %.1f ms wall, %.1f ms CPU per run\n' "$which" "$wall" "$cpu"
done
