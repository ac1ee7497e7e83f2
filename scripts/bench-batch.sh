#!/usr/bin/env bash
# `artq enqueue --batch` of N tasks (default 100,000), whole process, file
# backend, into a fresh queue and into a queue that already holds N tasks
# and their state index (a copy of one made at the start, so every run
# starts from the same bytes), interleaved round by round with the
# library's own Enqueue of a batch of 100,000 (BenchmarkEnqueueBatch100k)
# and ReadBatch+EnqueueBatch in-process (BenchmarkReadBatch100k; both
# always 100,000). Prints the median of ROUNDS (default 5) for tasks/s,
# CPU-s (user+sys) and peak RSS (both enqueue runs write the state index).
#
#   scripts/bench-batch.sh [ROUNDS] [N]
#   BEFORE=/path/to/older/artq scripts/bench-batch.sh   # also time that binary
#   BEFORE_TEST=/path/to/older/queue.test              # and its library benchmarks
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
rounds="${1:-5}" n="${2:-100000}"
command -v /usr/bin/time >/dev/null || { echo "bench-batch: needs /usr/bin/time (Debian package time)" >&2; exit 1; }

make -s build
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
awk -v n="$n" 'BEGIN{for(i=0;i<n;i++)print "{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"Task\",\"program\":\"make\",\"args\":[\"-C\",\"src\",\"test\"]}"}' >"$d/in.jsonl"
go test -c -o "$d/queue.test" ./lib/queue/
echo "bench-batch: $n tasks, $rounds rounds, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"

# The queue with N earlier tasks, made once by this tree's artq.
bin/artq --dir "$d/prior" enqueue --batch --manifest "$d/in.jsonl" >/dev/null

# cli NAME BINARY [FROM]: one whole-process run into a fresh queue, or
# into a copy of the queue FROM.
cli() {
	rm -rf "$d/q"
	[ -z "${3:-}" ] || cp -a "$3" "$d/q"
	/usr/bin/time -f "%e %U %S %M" -o "$d/t" "$2" --dir "$d/q" enqueue --batch --manifest "$d/in.jsonl" >/dev/null
	read -r wall user sys rss <"$d/t"
	awk -v n="$n" -v name="$1" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
		'BEGIN{printf "%s\t%.0f\t%.2f\t%.0f\n", name, n/w, u+s, r/1024}' >>"$d/results"
}
# lib NAME TESTBINARY BENCH: one library benchmark run (3 iterations).
lib() {
	"$2" -test.run '^$' -test.bench "^$3\$" -test.benchtime 3x 2>&1 |
		awk -v name="$1" '/tasks\/s/ {for (i = 1; i < NF; i++) if ($(i+1) == "tasks/s") printf "%s\t%.0f\t-\t-\n", name, $i}' >>"$d/results"
}
for r in $(seq "$rounds"); do
	[ -n "${BEFORE:-}" ] && cli "before: artq enqueue --batch" "$BEFORE"
	cli "artq enqueue --batch" bin/artq
	[ -n "${BEFORE:-}" ] && cli "before: artq enqueue --batch, $n before" "$BEFORE" "$d/prior"
	cli "artq enqueue --batch, $n before" bin/artq "$d/prior"
	[ -n "${BEFORE_TEST:-}" ] && lib "before: library Enqueue (baseline)" "$BEFORE_TEST" BenchmarkEnqueueBatch100k
	[ -n "${BEFORE_TEST:-}" ] && lib "before: library DecodeBatch+Enqueue" "$BEFORE_TEST" BenchmarkReadBatch100k
	lib "library Enqueue (baseline)" "$d/queue.test" BenchmarkEnqueueBatch100k
	lib "library ReadBatch+EnqueueBatch" "$d/queue.test" BenchmarkReadBatch100k
done
# The median of each column on its own, per name.
printf '%-40s %12s %8s %10s\n' "median of $rounds" tasks/s CPU-s "RSS MB"
cut -f1 "$d/results" | sort -u | while IFS= read -r name; do
	med() { awk -F'\t' -v nm="$name" -v c="$1" '$1 == nm {print $c}' "$d/results" | sort -g | awk '{v[NR] = $0} END {print v[int((NR + 1) / 2)]}'; }
	printf '%-40s %12s %8s %10s\n' "$name" "$(med 2)" "$(med 3)" "$(med 4)"
done
