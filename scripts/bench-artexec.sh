#!/usr/bin/env bash
# Whole-process cost of artexec, as ratios against baselines measured in the
# same run:
#   1. per-command cost of `artexec run -- true` (isolation none, landlock,
#      strict) against /bin/true spawned raw, GNU `timeout 10 true`, the Go
#      floor (os/exec) and bubblewrap (`bwrap --unshare-all --new-session
#      --die-with-parent` with / read-only, a fresh /proc and /dev: the peer
#      strict is held to), with the ratios the targets are stated in;
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
	CGO_ENABLED=0 go build -o "$tmp/" ./cmd/artexec ./cmd/artexec-shim
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
# The Go floor: the smallest Go program that runs true and waits (os/exec),
# to tell the Go runtime's own start-up cost from artexec's.
if command -v go >/dev/null 2>&1; then
	mkdir -p "$tmp/gofloor"
	cat >"$tmp/gofloor/main.go" <<'GO'
package main

import (
	"os"
	"os/exec"
)

func main() {
	if err := exec.Command(os.Args[1]).Run(); err != nil {
		os.Exit(1)
	}
}
GO
	printf 'module gofloor\ngo 1.22\n' >"$tmp/gofloor/go.mod"
	if (cd "$tmp/gofloor" && CGO_ENABLED=0 GOFLAGS= go build -o gofloor . 2>/dev/null); then
		add "Go floor: os/exec true" "$tmp/gofloor/gofloor $true_bin"
	fi
	# The floor of artexec's shape: two minimal Go processes, a runner
	# that starts a supervisor (itself again) that starts true, each
	# waiting for its child. Nothing is checked or isolated: what is left
	# is two Go runtimes starting and two fork+execs.
	mkdir -p "$tmp/gofloor2"
	cat >"$tmp/gofloor2/main.go" <<'GO'
package main

import (
	"os"
	"os/exec"
)

func main() {
	prog := os.Args[1]
	if os.Getenv("GOFLOOR2_SUPERVISOR") == "" {
		cmd := exec.Command("/proc/self/exe", prog)
		cmd.Env = []string{"GOFLOOR2_SUPERVISOR=1"}
		if err := cmd.Run(); err != nil {
			os.Exit(1)
		}
		return
	}
	if err := exec.Command(prog).Run(); err != nil {
		os.Exit(1)
	}
}
GO
	printf 'module gofloor2\ngo 1.22\n' >"$tmp/gofloor2/go.mod"
	if (cd "$tmp/gofloor2" && CGO_ENABLED=0 GOFLAGS= go build -o gofloor2 . 2>/dev/null); then
		add "Go floor: runner+supervisor" "$tmp/gofloor2/gofloor2 $true_bin"
	fi
fi
if command -v bwrap >/dev/null 2>&1; then
	add "bwrap --unshare-all" "bwrap --unshare-all --new-session --die-with-parent --ro-bind / / --proc /proc --dev /dev $true_bin"
fi
add "artexec run -- true" "$artexec run --workspace $ws -- true"
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
children_cpu_us() {
	times >"$tmp/times" # in this shell: a $(...) subshell has no children
	awk 'NR == 2 {
		n = split($0, f, " "); us = 0
		for (i = 1; i <= n; i++) { split(f[i], a, "m"); sub("s", "", a[2]); us += (a[1] * 60 + a[2]) * 1e6 }
		printf "%d", us }' "$tmp/times"
}
declare -A samples cpu wall
for ((r = 0; r < rounds; r++)); do
	for i in "${!cmds[@]}"; do
		read -r -a argv <<<"${cmds[$i]}"
		children_cpu_us >"$tmp/c0"
		t0=$(now)
		for ((k = 0; k < runs; k++)); do
			"${argv[@]}" >/dev/null
		done
		t1=$(now)
		children_cpu_us >"$tmp/c1"
		samples[$i]+="$(((t1 - t0) / runs / 1000)) "
		cpu[$i]+="$((($(<"$tmp/c1") - $(<"$tmp/c0")) / runs)) "
	done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }

echo "# artexec per-command cost: median of $rounds rounds x $runs runs, $(nproc) cores, $(uname -r), load $(cut -d' ' -f1 /proc/loadavg)"
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
done
# The targets' ratios (wall): none vs GNU timeout, landlock vs none,
# strict vs bwrap.
target() { # name numerator denominator
	if [ -n "${wall[$2]:-}" ] && [ -n "${wall[$3]:-}" ]; then
		printf '%-30s %s\n' "$1" "$(ratio "${wall[$2]}" "${wall[$3]}")x"
	fi
}
echo
target "none / GNU timeout" "artexec run -- true" "timeout 10 true (GNU)"
target "landlock / none" "artexec --isolation landlock" "artexec run -- true"
target "strict / bwrap" "artexec --isolation strict" "bwrap --unshare-all"
target "Go floor / GNU timeout" "Go floor: os/exec true" "timeout 10 true (GNU)"
target "none / two-process Go floor" "artexec run -- true" "Go floor: runner+supervisor"
if [ -n "${ARTEXEC_BASELINE:-}" ]; then
	target "baseline none / GNU timeout" "baseline run -- true" "timeout 10 true (GNU)"
	target "baseline landlock / none" "baseline --isolation landlock" "baseline run -- true"
	target "baseline strict / bwrap" "baseline --isolation strict" "bwrap --unshare-all"
	target "none: this / baseline" "artexec run -- true" "baseline run -- true"
	target "landlock: this / baseline" "artexec --isolation landlock" "baseline --isolation landlock"
	target "strict: this / baseline" "artexec --isolation strict" "baseline --isolation strict"
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
