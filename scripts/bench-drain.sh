#!/usr/bin/env bash
# bench-drain.sh — how fast `artq work --drain -j 8` drains a queue of
# `true` tasks under isolation none and landlock, and what CPU each task
# costs every process involved (artq, its supervisors, the tasks).
#
# Each round enqueues TASKS (default 400) tasks running `true` into a
# fresh queue and drains it, once per build and isolation, interleaved
# round by round so background load hits every variant alike; each figure
# is the median over ROUNDS (default 5) rounds. CPU is counted over every
# process of the drain: where a cgroup v2 can be made (root, a writable
# cgroup2 mount), each drain runs in a fresh cgroup and its cpu.stat
# usage_usec is read (tasks' own cgroups sit beneath it, and a removed
# cgroup's usage stays counted in its parent); elsewhere the user+sys of
# the waited-for children from the shell's `times` (a process nobody
# waits for would be missed there; the cgroup misses nothing).
#
# Usage: scripts/bench-drain.sh [ROUNDS [TASKS]]
# ARTQ=/path/to/artq (its artexec-shim beside it) to measure a given build
# (default: build this tree); ARTQ_BASELINE=/path/to/another/artq adds
# its rows to the same interleaved run (e.g. a build of an earlier commit).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${1:-5}"
dtasks="${2:-400}"
tmp="$(mktemp -d)"
cgroot=""
cleanup() {
	[ -z "$cgroot" ] || rmdir "$cgroot"/d* "$cgroot" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

artq="${ARTQ:-}"
if [ -z "$artq" ]; then
	CGO_ENABLED=0 go build -o "$tmp/" ./cmd/artq ./cmd/artexec-shim
	artq="$tmp/artq"
fi
ws="$tmp/ws"
mkdir -p "$ws"

# A cgroup v2 to count CPU in, if this shell may make one.
cg2="$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)"
if [ -n "$cg2" ] && [ -w "$cg2" ] && mkdir "$cg2/bench-drain-$$" 2>/dev/null; then
	cgroot="$cg2/bench-drain-$$"
fi

now() { date +%s%N; }
# children_cpu_us: user+sys CPU of every child this shell has waited for,
# from the `times` builtin (its second line), in microseconds.
children_cpu_us() {
	times >"$tmp/times"
	awk 'NR == 2 {
		n = split($0, f, " "); us = 0
		for (i = 1; i <= n; i++) { split(f[i], a, "m"); sub("s", "", a[2]); us += (a[1] * 60 + a[2]) * 1e6 }
		printf "%d", us }' "$tmp/times"
}
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }

for ((i = 0; i < dtasks; i++)); do
	echo '{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}'
done >"$tmp/tasks.jsonl"
declare -A drain dcpu
builds=("this:$artq")
[ -z "${ARTQ_BASELINE:-}" ] || builds+=("baseline:$ARTQ_BASELINE")
seq=0
for ((r = 0; r < rounds; r++)); do
	for b in "${builds[@]}"; do
		for iso in none landlock; do
			bin="${b#*:}"
			rm -rf "$tmp/q"
			"$bin" enqueue --dir "$tmp/q" --batch <"$tmp/tasks.jsonl" >/dev/null
			argv=("$bin" work --dir "$tmp/q" --drain -q -j 8 --allow true --workspace "$ws" --isolation "$iso")
			if [ -n "$cgroot" ]; then
				seq=$((seq + 1))
				cg="$cgroot/d$seq"
				mkdir "$cg"
				t0=$(now)
				(echo "$BASHPID" >"$cg/cgroup.procs" && exec "${argv[@]}")
				t1=$(now)
				us=$(awk '$1 == "usage_usec" {print $2}' "$cg/cpu.stat")
				rmdir "$cg"
			else
				children_cpu_us >"$tmp/c0"
				t0=$(now)
				"${argv[@]}"
				t1=$(now)
				children_cpu_us >"$tmp/c1"
				us=$(($(<"$tmp/c1") - $(<"$tmp/c0")))
			fi
			drain[${b%%:*} $iso]+="$((dtasks * 1000000000 / (t1 - t0))) "
			dcpu[${b%%:*} $iso]+="$((us / dtasks)) "
		done
	done
done

how="user+sys from the shell's times (waited-for processes)"
[ -z "$cgroot" ] || how="cpu.stat usage_usec of a cgroup v2 holding the drain"
echo "# artq work --drain -j 8: $dtasks tasks running true, median of $rounds rounds, $(nproc) cores, $(uname -r), load $(cut -d' ' -f1 /proc/loadavg)"
echo "# (CPU per task: $how: artq, its supervisors and the tasks)"
for b in "${builds[@]}"; do
	n="$(median "${drain[${b%%:*} none]}")"
	l="$(median "${drain[${b%%:*} landlock]}")"
	nc="$(median "${dcpu[${b%%:*} none]}")"
	lc="$(median "${dcpu[${b%%:*} landlock]}")"
	printf '%-32s %s tasks/s, CPU %s µs/task\n' "${b%%:*}: isolation none" "$n" "$nc" "${b%%:*}: isolation landlock" "$l" "$lc"
	printf '%-32s %s (CPU %s; target: tasks/s >= 0.9x)\n' "${b%%:*}: landlock / none" "$(ratio "$l" "$n")x" "$(ratio "$lc" "$nc")x"
	[ -z "${VERBOSE:-}" ] || printf '  rounds: none %s| landlock %s| CPU none %s| landlock %s\n' "${drain[${b%%:*} none]}" "${drain[${b%%:*} landlock]}" "${dcpu[${b%%:*} none]}" "${dcpu[${b%%:*} landlock]}"
done
if [ -n "${ARTQ_BASELINE:-}" ]; then
	for iso in none landlock; do
		printf '%-32s %s tasks/s, CPU %s\n' "$iso: this / baseline" \
			"$(ratio "$(median "${drain[this $iso]}")" "$(median "${drain[baseline $iso]}")")x" \
			"$(ratio "$(median "${dcpu[this $iso]}")" "$(median "${dcpu[baseline $iso]}")")x"
	done
fi
