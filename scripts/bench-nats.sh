#!/usr/bin/env bash
# The NATS JetStream backend against the file backend, measured in one run
# (docs/performance.md): the Go benchmarks of lib/queue/nats run ROUNDS times,
# interleaved, each against the file log, an embedded nats-server with
# sync_interval always (every write fsync'd: the configuration
# docs/artq-nats.md asks for) and one with the default two-minute sync.
# The report is the median of each figure and its ratio to the file
# backend's median from the same rounds.
#
#   scripts/bench-nats.sh [ROUNDS]        (default 5)
#
# Figures: conditional appends/s from one writer and from 64 concurrent
# writers; enqueue of a 10,000-task batch (tasks/s); claim latency, enqueue
# -> started, median and p99 over 200 tasks with one worker serving; and
# tasks/s draining 400 no-op tasks with 1, 2 and 4 workers (each its own
# connection, concurrency 4).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rounds="${1:-5}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/nats.test" ./lib/queue/nats

run() { # regexp benchtime
	"$work/nats.test" -test.run '^$' -test.bench "$1" -test.benchtime "$2" -test.benchmem=false 2>&1 |
		awk '/^Benchmark/ {
			name = $1; sub(/-[0-9]+$/, "", name)
			for (i = 3; i + 1 <= NF; i += 2) if ($(i+1) != "ns/op") print name, $(i+1), $i
		}' >>"$work/results"
}

for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	run 'AppendSerial$' 1s
	run 'AppendParallel64$' 1s
	run 'EnqueueBatch$' 3x
	run 'ClaimLatency$' 200x
	run 'Drain$' 2x
done

# name metric value -> median per (name, metric); then ratios to file.
sort -k1,1 -k2,2 -k3,3g "$work/results" | awk -f "$root/scripts/medians.awk" | sort >"$work/medians"

printf "%-38s %-10s %12s %12s %8s %12s %8s\n" benchmark metric file nats ratio nats-nosync ratio
awk '
	{
		split($1, p, "/"); bench = p[1]; target = p[2]; rest = ""
		for (i = 3; i in p; i++) rest = rest "/" p[i]
		key = bench rest " " $2
		val[key, target] = $3; rows[key] = 1
	}
	END {
		for (k in rows) {
			split(k, q, " ")
			f = val[k, "file"]; n = val[k, "nats"]; s = val[k, "nats-nosync"]
			printf "%-38s %-10s %12.1f %12.1f %8.2f %12.1f %8.2f\n", q[1], q[2], f, n, (f ? n / f : 0), s, (f ? s / f : 0)
		}
	}' "$work/medians" | sort
echo "medians of $rounds rounds; ratio = backend / file (for latencies, lower is better)"
