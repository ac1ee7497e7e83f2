#!/usr/bin/env bash
# bench-pair.sh — CPU of a few commands, interleaved round by round, with
# paired ratios: the quick A/B beside scripts/bench-artexec.sh, whose
# seventeen commands a round leave each one's caches colder.
#
# Each round runs every command RUNS times in a row, in a cgroup v2 of
# its own (CPU of every process it starts: cpu.stat usage_usec), and
# records its CPU per run. Prints, per command, the median over rounds and
# the median of its per-round ratios to the first command; PAIRS="a:b
# ..." (0-based command indexes) adds the median of per-round ratios of
# command a to command b. Needs root or a writable cgroup v2 (the
# unified hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified).
#
# Usage: scripts/bench-pair.sh ROUNDS RUNS 'command A' 'command B' ...
# e.g.:  PAIRS="2:1" scripts/bench-pair.sh 12 30 'FLOOR /bin/true' \
#          'OLD/artexec run --workspace WS -- true' 'NEW/artexec run --workspace WS -- true'
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
rounds=$1 runs=$2
shift 2
base=/sys/fs/cgroup
[ -f "$base/cgroup.procs" ] && [ -f "$base/cgroup.controllers" ] || base=/sys/fs/cgroup/unified
cg="$base/bench-pair.$$"
mkdir "$cg"
trap 'rmdir "$cg"/c* "$cg" 2>/dev/null || true' EXIT
n=$#
declare -A res
for ((k = 0; k < n; k++)); do mkdir "$cg/c$k"; done
usage() { awk '/usage_usec/ {print $2}' "$1/cpu.stat"; }
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for ((r = 0; r < rounds; r++)); do
	k=0
	for c in "$@"; do
		before=$(usage "$cg/c$k")
		bash -c 'echo $$ >"$1/cgroup.procs"; for ((i = 0; i < $2; i++)); do eval "$3" >/dev/null 2>&1; done' _ "$cg/c$k" "$runs" "$c"
		res[$r,$k]=$((($(usage "$cg/c$k") - before) / runs))
		k=$((k + 1))
	done
done
ratios() { # a b: per-round ratios of command a to command b
	for ((r = 0; r < rounds; r++)); do awk -v x="${res[$r,$1]}" -v y="${res[$r,$2]}" 'BEGIN {printf "%.4f\n", x / y}'; done
}
echo "# $rounds rounds x $runs runs, CPU µs a run (median), paired ratio to the first command; load $(cut -d' ' -f1 /proc/loadavg)"
k=0
for c in "$@"; do
	med=$(for ((r = 0; r < rounds; r++)); do echo "${res[$r,$k]}"; done | median)
	printf '%8s µs  paired %6.3fx  %s\n' "$med" "$(ratios "$k" 0 | median)" "$c"
	k=$((k + 1))
done
for pr in ${PAIRS:-}; do
	a=${pr%%:*} b=${pr##*:}
	printf 'pair %s/%s: median %.3fx (per round: %s)\n' "$a" "$b" "$(ratios "$a" "$b" | median)" "$(ratios "$a" "$b" | tr '\n' ' ')"
done
