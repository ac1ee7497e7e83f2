#!/usr/bin/env bash
# profile-drain.sh — where the CPU of an `artq work --drain -j 8` goes.
#
# Enqueues TASKS (default 1000) tasks running `true` into a fresh queue,
# drains it with `artq work --drain -q -j 8 --isolation ISOLATION` under
# `perf record -F 2000 -g` (artq and every process it starts), and prints
# the CPU by process name (share, and ms a task) and, for the supervisors
# (artexec-shim) and for artq, the functions with the largest share of
# their time; then, over a second drain, the supervisors' scheduling
# system calls a task (sysmon wake-ups, futex, preemption signals). Builds artq and
# artexec-shim unstripped (so perf can name Go functions) unless ARTQ names
# an artq with its artexec-shim beside it. Needs perf and the Go toolchain.
#
# Usage: scripts/profile-drain.sh [ISOLATION [TASKS]]
set -euo pipefail
cd "$(dirname "$0")/.."
iso="${1:-landlock}"
n="${2:-1000}"
command -v perf >/dev/null || { echo "profile-drain: needs perf" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
artq="${ARTQ:-}"
if [ -z "$artq" ]; then
	CGO_ENABLED=0 go build -o "$tmp/" ./cmd/artq ./cmd/artexec-shim
	artq="$tmp/artq"
fi
mkdir -p "$tmp/ws"
for ((i = 0; i < n; i++)); do
	echo '{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}'
done | "$artq" enqueue --dir "$tmp/q" --batch >/dev/null
perf record -q -F 2000 -g -o "$tmp/perf.data" -- \
	"$artq" work --dir "$tmp/q" --drain -q -j 8 --allow true --workspace "$tmp/ws" --isolation "$iso" 2>/dev/null
echo "# $n tasks, isolation $iso, load $(cut -d' ' -f1 /proc/loadavg): CPU by process (event count is ns of CPU)"
perf report -i "$tmp/perf.data" --no-children --sort comm -g none --stdio 2>/dev/null | grep -E '^# Event count|%' >"$tmp/comm.txt"
cat "$tmp/comm.txt"
awk -v n="$n" '/Event count/ {ev = $NF} /%/ {sub("%", "", $1); printf "  %-14s %.3f ms a task\n", $2, $1 / 100 * ev / n / 1e6; t += $1 / 100 * ev / n / 1e6} END {printf "  %-14s %.3f ms a task\n", "all", t}' "$tmp/comm.txt"
for comm in artexec-shim artq; do
	echo "# $comm's time by function (inclusive, share of its own time)"
	perf report -i "$tmp/perf.data" --children --comm "$comm" --percentage relative --sort sym -g none --stdio 2>/dev/null |
		grep -E '%' | head -"${TOP:-40}" || true
done
# The supervisors' scheduling, over a second drain of as many tasks
# (system call tracepoints, no sampling): per task, how often their Go
# runtime's sysmon thread woke (nanosleep: nothing else in a supervisor
# sleeps), threads woke one another (futex) and preemption signals went
# out (tgkill).
if [ -n "$(perf list 2>/dev/null | grep 'syscalls:sys_enter_nanosleep')" ]; then
	for ((i = 0; i < n; i++)); do
		echo '{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}'
	done | "$artq" enqueue --dir "$tmp/q2" --batch >/dev/null
	perf record -q -o "$tmp/sc.data" -e syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex,syscalls:sys_enter_tgkill -- \
		"$artq" work --dir "$tmp/q2" --drain -q -j 8 --allow true --workspace "$tmp/ws" --isolation "$iso" 2>/dev/null
	echo "# artexec-shim's system calls a task (second drain)"
	perf script -i "$tmp/sc.data" -F comm,event 2>/dev/null |
		awk -v n="$n" '$1 == "artexec-shim" {sub("syscalls:sys_enter_", "", $2); sub(":", "", $2); c[$2]++}
			END {for (k in c) printf "  %-10s %.2f\n", k, c[k] / n}' | sort
fi
