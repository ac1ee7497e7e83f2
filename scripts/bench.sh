#!/usr/bin/env bash
# Every benchmark behind docs/performance.md in one run. Each part measures
# its own baseline in the same run (raw exec, GNU timeout, git archive,
# encoding/json, one fsync per record) and prints ratios of medians; the
# machine is shared and noisy, so read the ratios, not the absolute times.
#
#   scripts/bench.sh [quick]     quick: fewer rounds (a smoke run, ~2 min)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

quick="${1:-}"
if [ "$quick" = quick ]; then
	exec_rounds=5 exec_runs=10 release_runs=3 count=2
else
	exec_rounds=21 exec_runs=30 release_runs=9 count=5
fi

echo "bench: $(go version), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"

section() { printf '\n### %s\n\n' "$*"; }

# gobench PKG REGEX: the median over -count runs of every metric of every
# benchmark (plain POSIX awk: no gawk needed).
gobench() {
	go test -run '^$' -bench "$2" -benchmem -count "$count" "$1" 2>&1 |
		awk '/^Benchmark/ {
			name = $1; sub(/-[0-9]+$/, "", name)
			for (i = 3; i < NF; i++) if ($(i+1) ~ /\/op$|\/s$/) print name "\t" $(i+1) "\t" $i
		}' |
		sort -t "$(printf '\t')" -k1,1 -k2,2 -k3,3g |
		awk -F'\t' '{ k = $1 "\t" $2; v[k, ++n[k]] = $3 }
		END { for (k in n) { split(k, p, "\t"); printf "%-60s %14s %s\n", p[1], v[k, int((n[k] + 1) / 2)], p[2] } }' |
		sort
}

section "artexec: per-command cost and bounded capture (scripts/bench-artexec.sh)"
bash scripts/bench-artexec.sh "$exec_rounds" "$exec_runs"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	section "artexec and artq as an unprivileged user (scripts/bench-user.sh)"
	bash scripts/bench-user.sh "$((exec_rounds < 9 ? exec_rounds : 9))" "$exec_runs" 400
fi

section "artq: log appends, group commit, replay (go test -bench)"
gobench ./lib/queue/ 'BenchmarkAppendSerial|BenchmarkAppendParallel64|BenchmarkReplay1M|BenchmarkSummary200k|BenchmarkEnqueueBatch$'

section "artq: whole-process enqueue --batch and status --summary (vs 200 single enqueues)"
d=$(mktemp -d)
awk 'BEGIN{for(i=0;i<50000;i++)print "{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"Task\",\"program\":\"make\",\"args\":[\"-C\",\"src\",\"test\"]}"}' >"$d/50k.jsonl"
for i in 1 2 3 4 5; do
	rm -rf "$d/q"
	/usr/bin/time -f "artq enqueue --batch 50000 tasks: %e s, %M KB peak" artq --dir "$d/q" enqueue --batch -o text <"$d/50k.jsonl" >/dev/null
done 2>&1 | sort | sed -n 3p | sed 's/^/median of 5: /'
start=$(date +%s%N)
for i in $(seq 200); do artq --dir "$d/s" enqueue -o text -- true >/dev/null; done
echo "baseline: 200 single-task enqueue processes: $(( ($(date +%s%N) - start) / 1000000 )) ms"
for i in 1 2 3 4 5; do
	/usr/bin/time -f "artq status --summary over 50000 tasks: %e s, %M KB peak" artq --dir "$d/q" status --summary >/dev/null
done 2>&1 | sort | sed -n 3p | sed 's/^/median of 5: /'
rm -rf "$d"

section "artobs: redaction and JSONL append (go test -bench)"
gobench ./lib/obs/ '.'

section "artagent: loop overhead per step (go test -bench)"
gobench ./lib/agent/ 'LoopStep'

section "artgoal: store and decode (go test -bench)"
gobench ./lib/goal/ '.'

section "artrelease: build vs git archive (scripts/bench-release.sh)"
bash scripts/bench-release.sh "$release_runs"

if [ -f scripts/bench-nats.sh ]; then
	section "artq on NATS JetStream vs the file backend (scripts/bench-nats.sh)"
	bash scripts/bench-nats.sh
fi
