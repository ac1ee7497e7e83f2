#!/usr/bin/env bash
# Redaction throughput against a baseline and a peer, interleaved rounds,
# medians: this tree's lib/obs benchmarks beside the same benchmarks built
# from a baseline commit (default: the merge base with main, i.e. the
# redactor before this branch), and gitleaks' own detector on the same
# Draft lines. Pinned to one core.
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
