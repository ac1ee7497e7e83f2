#!/usr/bin/env bash
# Whole-process cost of artexec, as ratios against baselines measured in the
# same run:
#   1. per-command cost of `artexec run -- true` (isolation none, landlock,
#      strict) against /bin/true spawned raw, GNU `timeout 10 true`, an
#      empty Go program, the Go floors (os/exec; two processes, the shape
#      of artexec) and bubblewrap (`bwrap --unshare-all --new-session
#      --die-with-parent` with / read-only, a fresh /proc and /dev: the peer
#      strict is held to; and the same with a mount namespace only), with
#      the ratios the targets are stated in. CPU is every process of the
#      command, from a cgroup of the script's own where it can make one
#      (see cpu_us);
#   2. capture of 1 GiB of text output with a 1 MiB cap: peak RSS and
#      throughput against the same pipeline writing to /dev/null. (Text, not
#      /dev/zero: a NUL byte is six bytes of JSON, "\u0000", which would
#      measure JSON escaping of the kept 1 MiB rather than the capture.)
# Commands are interleaved round by round so background load hits them all
# alike; each figure is the median over rounds.
#
# Usage: scripts/bench-artexec.sh [ROUNDS [RUNS_PER_ROUND]]
# Uses artexec from PATH (with the artexec-shim installed beside it, if
# any), else builds both. ARTEXEC_BASELINE=/path/to/another/artexec adds its
# rows to the same interleaved run (e.g. a build of an earlier commit), and
# ARTQ_BASELINE=/path/to/another/artq (its artexec-shim beside it) its
# drain rows to section 3. Needs bash, coreutils (timeout,
# head, sort), and /usr/bin/time for peak RSS (skipped without it); bwrap
# (Debian: bubblewrap) for its row (skipped without it).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${1:-15}"
runs="${2:-40}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if command -v artexec >/dev/null 2>&1; then
	artexec="$(command -v artexec)"
else
	CGO_ENABLED=0 go build -o "$tmp/" ./cmd/artexec ./cmd/artexec-cli ./cmd/artexec-shim
	artexec="$tmp/artexec"
fi
# artq for the drain rows (section 3), beside its shim as it is installed.
artq="$(dirname "$artexec")/artq"
if [ ! -x "$artq" ]; then
	CGO_ENABLED=0 go build -o "$tmp/" ./cmd/artq ./cmd/artexec-shim
	artq="$tmp/artq"
fi
true_bin="$(command -v true)"
[ "${true_bin#/}" != "$true_bin" ] || true_bin=/bin/true # bash's builtin is no baseline
ws="$tmp/ws"
mkdir -p "$ws"

names=()
cmds=()
add() { names+=("$1"); cmds+=("$2"); }
add "/bin/true (raw spawn)" "$true_bin"
add "timeout 10 true (GNU)" "timeout 10 $true_bin"
# The Go floors (scripts/gofloors.sh): an empty Go program, one that runs
# true and waits (os/exec), and two of them in artexec's shape (a runner
# that starts a supervisor that starts true), to tell the Go runtime's own
# start-up cost from artexec's.
# shellcheck source=scripts/gofloors.sh
. scripts/gofloors.sh
if build_gofloor goempty "$tmp"; then
	add "Go: empty program" "$tmp/goempty/goempty"
fi
if build_gofloor gofloor "$tmp"; then
	add "Go floor: os/exec true" "$tmp/gofloor/gofloor $true_bin"
fi
if build_gofloor gofloor2 "$tmp"; then
	add "Go floor: runner+supervisor" "$tmp/gofloor2/gofloor2 $true_bin"
fi
# The same in strict's namespaces, where this machine lets the script
# make them: the two-process floor plus the kernel's cost of the
# namespaces strict and bwrap --unshare-all both make.
if [ -x "$tmp/gofloor2/gofloor2" ] && "$tmp/gofloor2/gofloor2" -ns "$true_bin" 2>/dev/null; then
	add "Go floor: same, namespaced" "$tmp/gofloor2/gofloor2 -ns $true_bin"
fi
# The binaries' own start, nothing run: this tree's artexec and
# artexec-shim built (as the release builds them) with an overlay of their
# main.go whose main returns at once, so every package is linked and
# initialised as in a run. Above "Go: empty program" they are what the
# runner's and the supervisor's binaries cost before any work: the part
# of artexec's start the two-process floor does not have and no change
# inside `run` can remove.
# overlay_build SRC DIR PKG...: build PKG... into DIR/ as the release
# builds them, with this tree's file SRC replaced by DIR/$(basename SRC)
# (written by the caller).
overlay_build() {
	local src="$1" dir="$2"
	shift 2
	printf '{"Replace":{"%s":"%s"}}' "$PWD/$src" "$dir/${src##*/}" >"$dir/overlay.json"
	CGO_ENABLED=0 go build -overlay "$dir/overlay.json" -trimpath -ldflags='-s -w' -o "$dir/" "$@" 2>/dev/null
}
null_bin() { # NAME: build DIR/NAME from cmd/NAME with main returning at once
	local src="cmd/$1/main.go" dir="$tmp/null-$1"
	[ -f "$src" ] && command -v go >/dev/null 2>&1 || return 1
	mkdir -p "$dir"
	returning_main <"$src" >"$dir/main.go"
	overlay_build "$src" "$dir" "./cmd/$1"
}
if null_bin artexec && null_bin artexec-shim; then
	add "artexec, nothing run" "$tmp/null-artexec/artexec"
	add "artexec-shim, nothing run" "$tmp/null-artexec-shim/artexec-shim"
	if build_gofloor gofloor2null "$tmp"; then
		add "Go floor binary, nothing run" "$tmp/gofloor2null/gofloor2null"
	fi
fi
if command -v bwrap >/dev/null 2>&1; then
	add "bwrap --unshare-all" "bwrap --unshare-all --new-session --die-with-parent --ro-bind / / --proc /proc --dev /dev $true_bin"
	# The same without --unshare-all (a mount namespace only, and a user
	# namespace when not root): what bwrap's other namespaces cost it.
	add "bwrap, mount namespace only" "bwrap --new-session --die-with-parent --ro-bind / / --proc /proc --dev /dev $true_bin"
fi
add "artexec run -- true" "$artexec run --workspace $ws -- true"
# The same run without a task cgroup: this tree's artexec built with
# newTaskCgroup making none (an overlay of lib/execx/cgroup_linux.go),
# where the runner makes task cgroups (root, or a delegated subtree): what
# the cgroup costs a run, a step the floor does not make.
nocg_bin() {
	local src=lib/execx/cgroup_linux.go dir="$tmp/nocg"
	command -v go >/dev/null 2>&1 || return 1
	"$artexec" run --workspace "$ws" -- true 2>/dev/null | grep -q '"cgroup"' || return 1
	mkdir -p "$dir"
	sed '/^func newTaskCgroup() \*taskCgroup {$/,/^}$/ s/^\tif cgroupState.off.Load() {$/\tif true {/' "$src" >"$dir/cgroup_linux.go"
	[ "$(grep -c '^	if true {$' "$dir/cgroup_linux.go")" = 1 ] || return 1
	overlay_build "$src" "$dir" ./cmd/artexec ./cmd/artexec-shim
}
if nocg_bin; then
	add "artexec run, no task cgroup" "$tmp/nocg/artexec run --workspace $ws -- true"
fi
iso_json="$("$artexec" isolation 2>/dev/null || true)"
available() { # backend name: available in `artexec isolation`?
	tr -d ' \n' <<<"$iso_json" | grep -q "\"backend\":\"$1\",\"available\":true"
}
if available landlock; then
	add "artexec --isolation landlock" "$artexec run --workspace $ws --isolation landlock -- true"
fi
if available strict; then
	add "artexec --isolation strict" "$artexec run --workspace $ws --isolation strict -- true"
fi
if [ -n "${ARTEXEC_BASELINE:-}" ]; then
	add "baseline run -- true" "$ARTEXEC_BASELINE run --workspace $ws -- true"
	if available landlock; then
		add "baseline --isolation landlock" "$ARTEXEC_BASELINE run --workspace $ws --isolation landlock -- true"
	fi
	if available strict; then
		add "baseline --isolation strict" "$ARTEXEC_BASELINE run --workspace $ws --isolation strict -- true"
	fi
fi

now() { date +%s%N; }
# children_cpu_us: user+sys CPU of every child this shell has waited for,
# from the `times` builtin (its second line), in microseconds. CPU time is
# much less disturbed than wall time by other load on a shared machine.
# It misses the CPU of processes nobody waits for: bwrap's outer process
# exits without reaping its PID 1 in the new namespace, so `times` saw
# well under half of bwrap's CPU (see cpu_us).
children_cpu_us() {
	times >"$tmp/times" # in this shell: a $(...) subshell has no children
	awk 'NR == 2 {
		n = split($0, f, " "); us = 0
		for (i = 1; i <= n; i++) { split(f[i], a, "m"); sub("s", "", a[2]); us += (a[1] * 60 + a[2]) * 1e6 }
		printf "%d", us }' "$tmp/times"
}
# The per-command CPU of section 1 is taken from a cgroup v2 of this
# script's own where it can make one (root, or a delegated subtree): the
# script's shell moves into it, and cpu.stat's usage_usec counts every
# process of a command, waited for or not, as `perf stat` does. Without
# one, the shell's `times` (children_cpu_us). Neither counts work the
# kernel defers to its own threads (a network namespace is torn down by a
# kernel worker): bwrap and strict both have one.
bench_cg=""
cg_line="$(grep '^0::' /proc/self/cgroup 2>/dev/null || true)"
# the first cgroup2 mount, if it shows the whole hierarchy: its mount point
cg_mount="$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; f = 1 }; break } } f { exit }' /proc/self/mountinfo 2>/dev/null || true)"
if [ -n "$cg_line" ] && [ -n "$cg_mount" ]; then
	cg_parent="$cg_mount${cg_line#0::}"
	cg_home="$cg_parent"
	if mkdir "$cg_parent/artexec-bench-$$" 2>/dev/null; then
		if echo $$ >"$cg_parent/artexec-bench-$$/cgroup.procs" 2>/dev/null && [ -r "$cg_parent/artexec-bench-$$/cpu.stat" ]; then
			bench_cg="$cg_parent/artexec-bench-$$"
			trap 'echo $$ >"$cg_home/cgroup.procs" 2>/dev/null; rmdir "$bench_cg" 2>/dev/null; rm -rf "$tmp"' EXIT
		else
			rmdir "$cg_parent/artexec-bench-$$"
		fi
	fi
fi
# cpu_us: CPU used so far by this shell's cgroup (every process in it), or
# by its waited-for children.
cpu_us() {
	if [ -n "$bench_cg" ]; then
		local k v
		while read -r k v; do
			if [ "$k" = usage_usec ]; then
				echo "$v"
				return
			fi
		done <"$bench_cg/cpu.stat"
	fi
	children_cpu_us
}
declare -A samples cpu wall cpum
for ((r = 0; r < rounds; r++)); do
	for i in "${!cmds[@]}"; do
		read -r -a argv <<<"${cmds[$i]}"
		t0=$(now)
		cpu_us >"$tmp/c0" # no process of its own in a cgroup: nothing but the runs counted
		for ((k = 0; k < runs; k++)); do
			"${argv[@]}" >/dev/null
		done
		cpu_us >"$tmp/c1"
		t1=$(now)
		samples[$i]+="$(((t1 - t0) / runs / 1000)) "
		cpu[$i]+="$((($(<"$tmp/c1") - $(<"$tmp/c0")) / runs)) "
	done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }

echo "# artexec per-command cost: median of $rounds rounds x $runs runs, $(nproc) cores, $(uname -r), load $(cut -d' ' -f1 /proc/loadavg)"
if [ -n "$bench_cg" ]; then
	echo "# CPU: every process of the command (a cgroup's cpu.stat usage_usec)"
else
	echo "# CPU: the processes the shell's children waited for (times; no cgroup of the script's own could be made: bwrap's is undercounted)"
fi
printf '%-30s %10s %8s %10s %10s %8s %10s\n' "command" "wall µs" "vs raw" "vs timeout" "CPU µs" "vs raw" "vs timeout"
raw="$(median "${samples[0]}")"
gnu="$(median "${samples[1]}")"
rawc="$(median "${cpu[0]}")"
gnuc="$(median "${cpu[1]}")"
for i in "${!cmds[@]}"; do
	m="$(median "${samples[$i]}")"
	c="$(median "${cpu[$i]}")"
	printf '%-30s %10s %8s %10s %10s %8s %10s\n' "${names[$i]}" "$m" "$(ratio "$m" "$raw")x" "$(ratio "$m" "$gnu")x" \
		"$c" "$(ratio "$c" "$rawc")x" "$(ratio "$c" "$gnuc")x"
	wall[${names[$i]}]="$m"
	cpum[${names[$i]}]="$c"
done
# paired: a ratio as the median of each round's ratio of the two
# commands' CPU (they ran side by side in every round): less moved by load
# that changes between rounds than the ratio of two medians.
paired() { # label numerator denominator
	local i a="" b=""
	for i in "${!names[@]}"; do
		[ "${names[$i]}" = "$2" ] && a="${cpu[$i]}"
		[ "${names[$i]}" = "$3" ] && b="${cpu[$i]}"
	done
	[ -n "$a" ] && [ -n "$b" ] || return 0
	printf '%-30s CPU %sx (median of %d per-round ratios)\n' "$1" \
		"$(paste <(tr ' ' '\n' <<<"$a" | grep .) <(tr ' ' '\n' <<<"$b" | grep .) | awk '{print $1 / $2}' | sort -n |
			awk '{v[NR] = $1} END {printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')" "$rounds"
}
# The targets' ratios, wall and CPU: none vs the two-process Go floor,
# landlock vs none, strict vs bwrap (and the older ones beside).
target() { # name numerator denominator
	if [ -n "${wall[$2]:-}" ] && [ -n "${wall[$3]:-}" ]; then
		printf '%-30s wall %s  CPU %s\n' "$1" "$(ratio "${wall[$2]}" "${wall[$3]}")x" "$(ratio "${cpum[$2]}" "${cpum[$3]}")x"
	fi
}
echo
target "none / GNU timeout" "artexec run -- true" "timeout 10 true (GNU)"
target "landlock / none" "artexec --isolation landlock" "artexec run -- true"
target "strict / bwrap" "artexec --isolation strict" "bwrap --unshare-all"
target "Go floor / GNU timeout" "Go floor: os/exec true" "timeout 10 true (GNU)"
target "none / two-process Go floor" "artexec run -- true" "Go floor: runner+supervisor"
paired "none / floor, paired" "artexec run -- true" "Go floor: runner+supervisor"
paired "landlock / none, paired" "artexec --isolation landlock" "artexec run -- true"
paired "strict / bwrap, paired" "artexec --isolation strict" "bwrap --unshare-all"
# The floor with artexec's two binaries in place of the minimal ones: the
# two-process floor plus what each binary's own start costs above an empty
# Go program (the rows "nothing run").
if [ -n "${cpum[artexec, nothing run]:-}" ] && [ -n "${cpum[Go: empty program]:-}" ]; then
	binfloor() { # wall|cpu array name
		local -n a="$1"
		echo $((a["Go floor: runner+supervisor"] + a["artexec, nothing run"] + a["artexec-shim, nothing run"] - 2 * a["Go: empty program"]))
	}
	bw="$(binfloor wall)" bc="$(binfloor cpum)"
	printf '%-30s wall %s µs  CPU %s µs\n' "floor with artexec's binaries" "$bw" "$bc"
	printf '%-30s wall %s  CPU %s\n' "none / that floor" "$(ratio "${wall[artexec run -- true]}" "$bw")x" "$(ratio "${cpum[artexec run -- true]}" "$bc")x"
	# strict's floor: the same binaries, started in strict's namespaces
	# (the namespaced two-process floor in place of the plain one).
	if [ -n "${cpum[Go floor: same, namespaced]:-}" ] && [ -n "${cpum[artexec --isolation strict]:-}" ]; then
		sw=$((bw + wall["Go floor: same, namespaced"] - wall["Go floor: runner+supervisor"]))
		sc=$((bc + cpum["Go floor: same, namespaced"] - cpum["Go floor: runner+supervisor"]))
		printf '%-30s wall %s µs  CPU %s µs\n' "strict's floor (namespaced)" "$sw" "$sc"
		printf '%-30s wall %s  CPU %s\n' "strict / that floor" "$(ratio "${wall[artexec --isolation strict]}" "$sw")x" "$(ratio "${cpum[artexec --isolation strict]}" "$sc")x"
		if [ -n "${cpum[bwrap --unshare-all]:-}" ]; then
			printf '%-30s wall %s  CPU %s\n' "that floor / bwrap" "$(ratio "$sw" "${wall[bwrap --unshare-all]}")x" "$(ratio "$sc" "${cpum[bwrap --unshare-all]}")x"
		fi
	fi
fi
# none above the two-process floor, in parts (CPU): each binary's start
# above the floor's own binary's (all three started with main returning at
# once), the task cgroup, and the rest: the run's own work (resolving the
# program and workspace, the pipes, the spec, the Result).
if [ -n "${cpum[Go floor binary, nothing run]:-}" ] && [ -n "${cpum[artexec run, no task cgroup]:-}" ]; then
	fb="${cpum[Go floor binary, nothing run]}"
	gap=$((cpum["artexec run -- true"] - cpum["Go floor: runner+supervisor"]))
	rb=$((cpum["artexec, nothing run"] - fb)) sb=$((cpum["artexec-shim, nothing run"] - fb))
	cg=$((cpum["artexec run -- true"] - cpum["artexec run, no task cgroup"]))
	echo "none - floor, CPU µs: $gap = runner binary $rb + supervisor binary $sb + task cgroup $cg + the run's own work $((gap - rb - sb - cg))"
	target "none without its cgroup / floor" "artexec run, no task cgroup" "Go floor: runner+supervisor"
	paired "the same, paired" "artexec run, no task cgroup" "Go floor: runner+supervisor"
fi
if [ -n "${ARTEXEC_BASELINE:-}" ]; then
	target "baseline none / GNU timeout" "baseline run -- true" "timeout 10 true (GNU)"
	target "baseline landlock / none" "baseline --isolation landlock" "baseline run -- true"
	target "baseline strict / bwrap" "baseline --isolation strict" "bwrap --unshare-all"
	target "none: this / baseline" "artexec run -- true" "baseline run -- true"
	target "landlock: this / baseline" "artexec --isolation landlock" "baseline --isolation landlock"
	target "strict: this / baseline" "artexec --isolation strict" "baseline --isolation strict"
	paired "none: this / baseline, paired" "artexec run -- true" "baseline run -- true"
	paired "landlock: ditto" "artexec --isolation landlock" "baseline --isolation landlock"
	paired "strict: ditto" "artexec --isolation strict" "baseline --isolation strict"
fi

echo
echo "# capture of 1 GiB of text output with a 1 MiB cap"
gib=$((1 << 30))
producer="yes 'a line of ordinary program output, as text' | head -c $gib"
t0=$(now)
sh -c "$producer" >/dev/null
t1=$(now)
base_ms=$(((t1 - t0) / 1000000))
if [ -x /usr/bin/time ]; then
	t0=$(now)
	/usr/bin/time -f '%M' -o "$tmp/time.txt" "$artexec" run --workspace "$ws" --output-bytes $((1 << 20)) -- sh -c "$producer" >"$tmp/result.json"
	t1=$(now)
	rss_kb="$(tail -1 "$tmp/time.txt")"
else
	t0=$(now)
	"$artexec" run --workspace "$ws" --output-bytes $((1 << 20)) -- sh -c "$producer" >"$tmp/result.json"
	t1=$(now)
	rss_kb="n/a (no /usr/bin/time)"
fi
cap_ms=$(((t1 - t0) / 1000000))
grep -q "\"output_bytes\":$gib," "$tmp/result.json" || { echo "capture: output_bytes is not $gib" >&2; exit 1; }
grep -q '"output_truncated":true' "$tmp/result.json" || { echo "capture: not truncated" >&2; exit 1; }
printf '%-32s %s\n' "bytes counted" "$gib (output_bytes in the Result)"
printf '%-32s %s\n' "peak RSS (largest process)" "${rss_kb} KiB"
printf '%-32s %s ms (%s MiB/s)\n' "artexec capture" "$cap_ms" "$((1024 * 1000 / (cap_ms > 0 ? cap_ms : 1)))"
printf '%-32s %s ms (ratio %s)\n' "same pipeline > /dev/null" "$base_ms" "$(ratio "$cap_ms" "$((base_ms > 0 ? base_ms : 1))")x"

# 3. A queue drained by `artq work -j 8` under isolation none and landlock:
# scripts/bench-drain.sh, with this run's artq (and ARTQ_BASELINE's rows),
# at most 5 rounds of DRAIN_TASKS (default 400) tasks running true. Its
# CPU per task is counted over every process of the drain (a cgroup v2
# where one can be made, else the shell's `times`).
if available landlock; then
	echo
	ARTQ="$artq" scripts/bench-drain.sh "$((rounds < 5 ? rounds : 5))" "${DRAIN_TASKS:-400}"
fi
