#!/usr/bin/env bash
# Redaction throughput against a baseline and a peer, interleaved rounds,
# medians: this tree's lib/obs benchmarks beside the same benchmarks built
# from a baseline commit (default: the merge base with main, i.e. the
# redactor before this branch), and gitleaks' own detector on the same
# Draft lines. Pinned to one core. Then the start-up cost of the rules
# against the same baseline: the wall and CPU time of `artobs redact` on
# one Draft (a fresh process each time, so the rule table is built cold),
# binary sizes, and the package inits of artexec (GODEBUG=inittrace=1;
# `artexec run` runs the same inits).
#
#   scripts/bench-redact.sh [rounds] [baseline-ref]
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
rounds="${1:-5}"
base="${2:-$(git merge-base HEAD main 2>/dev/null || git rev-parse HEAD~1)}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

git archive --format=tar "$base" | tar -x -C "$tmp" --one-top-level=base
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./lib/obs)
go test -c -o "$tmp/new.test" ./lib/obs
benches='^(BenchmarkRedact|BenchmarkEmitJSONL|BenchmarkEmitJSONLBatch64)$'
echo "bench-redact: $(go version), load $(cut -d' ' -f1-3 /proc/loadavg), baseline $(git rev-parse --short "$base"), $rounds rounds"
for r in $(seq "$rounds"); do
	for which in base new; do
		(cd lib/obs && taskset -c 0 "$tmp/$which.test" -test.run '^$' -test.bench "$benches" -test.benchtime 1s) |
			awk -v w="$which" '/^Benchmark/ { for (i = 3; i < NF; i++) if ($(i+1) == "drafts/cpu-s") print w "\t" $1 "\t" $i }'
	done
	(cd lib/obs && taskset -c 0 "$tmp/new.test" -test.run '^$' -test.bench '^BenchmarkGitleaksDetect$' -test.benchtime 1s) |
		awk '/^Benchmark/ { for (i = 3; i < NF; i++) if ($(i+1) == "drafts/cpu-s") print "gitleaks\t" $1 "\t" $i }'
done >"$tmp/all.tsv"
# Median per (build, benchmark).
sort -t "$(printf '\t')" -k1,1 -k2,2 -k3,3g "$tmp/all.tsv" |
	awk -F'\t' '{ k = $1 "\t" $2; v[k, ++n[k]] = $3 }
	END { for (k in n) { split(k, p, "\t"); printf "%-9s %-28s %9.0f drafts/cpu-s\n", p[1], p[2], v[k, int((n[k] + 1) / 2)] } }' |
	sed 's/-[0-9]* / /' | sort -k2,2 -k1,1

# artexec-cli where the tree has it: artexec hands --help to it.
(cd "$tmp/base" && go build -o "$tmp/basebin/" ./cmd/artobs ./cmd/artexec $(ls -d ./cmd/artexec-cli 2>/dev/null))
go build -o "$tmp/newbin/" ./cmd/artobs ./cmd/artexec $(ls -d ./cmd/artexec-cli 2>/dev/null)
printf '%s\n' '{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"task/1","type":"task.output","attrs":{"out":"upload with ghp_R2cLqX9wZk3VbN7mT4yH8sJ1fD6gA0eP5uIo done","cmd":"curl -H \"X-Api-Key: 1f2e3d4c5b6a79880716253443526170\" https://api.example.com/"}}' >"$tmp/draft.jsonl"

echo "start-up: load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds of 20 runs"
for which in base new; do
	printf '%-5s artobs %6.1f MB  artexec %6.1f MB  artexec package inits %s\n' "$which" \
		"$(echo "$(stat -c %s "$tmp/${which}bin/artobs") / 1048576" | bc -l)" \
		"$(echo "$(stat -c %s "$tmp/${which}bin/artexec") / 1048576" | bc -l)" \
		"$(GODEBUG=inittrace=1 "$tmp/${which}bin/artexec" --help 2>&1 >/dev/null | grep -c '^init ')"
done
# Wall and CPU (user+sys) time of 20 runs, per run; CPU time is the
# steadier figure on a loaded machine.
# "floor" is the same binary doing no redaction (`artobs --help`): the
# cost of exec, page-in and runtime start on this machine at this load,
# which no change to the rules can remove.
TIMEFORMAT='%R %U %S'
for r in $(seq "$rounds"); do
	for which in base new; do
		t=$({ time (for _ in $(seq 20); do "$tmp/${which}bin/artobs" redact <"$tmp/draft.jsonl" >/dev/null; done); } 2>&1)
		echo "$which $t"
	done
	t=$({ time (for _ in $(seq 20); do "$tmp/newbin/artobs" --help >/dev/null 2>&1; done); } 2>&1)
	echo "floor $t"
done >"$tmp/times"
for which in base new floor; do
	grep "^$which " "$tmp/times" | awk '{ printf "%f %f\n", $2 * 50, ($3 + $4) * 50 }' >"$tmp/$which.ms"
	wall=$(cut -d' ' -f1 "$tmp/$which.ms" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	cpu=$(cut -d' ' -f2 "$tmp/$which.ms" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	what="artobs redact, one draft"
	[ "$which" = floor ] && what="artobs --help (new)      "
	printf '%-5s %s, cold process: median %.1f ms wall, %.1f ms CPU per run\n' "$which" "$what" "$wall" "$cpu"
done
