#!/usr/bin/env bash
# bench-user.sh — what runs cost when an unprivileged user starts them,
# as ratios to isolation none in the same interleaved run:
#   1. `artexec run -- true` under none, landlock and strict, RUNS times
#      in a row per round (one runuser per round, not per run);
#   2. `artq work --drain -j 8` of TASKS `true` tasks under none and
#      landlock, one drain per round: CPU per task and tasks per second.
# Every command runs as BENCH_USER (default nobody) and its CPU is every
# process's, from a cgroup v2 of its own (usage_usec). Each figure is the
# median over ROUNDS rounds; "paired" is the median of per-round ratios.
# Landlock as a user runs in user, PID and mount namespaces of its own
# where the kernel allows (docs/artexec.md, Landlock as a user): this is
# where their cost shows (scripts/bench-artexec.sh runs as its caller,
# usually root).
#
# Usage (as root: it makes cgroups and switches user):
#   scripts/bench-user.sh [ROUNDS [RUNS [TASKS]]]
# Uses artexec and artq from PATH (their artexec-shim beside them), else
# builds them. BASELINE=/dir/with/artexec/and/artq adds its rows to the
# same run (e.g. a build of an earlier commit).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${1:-7}"
runs="${2:-20}"
tasks="${3:-400}"
user="${BENCH_USER:-nobody}"
if [ "$(id -u)" != 0 ]; then
	echo "bench-user.sh: run as root (it makes cgroups and runs commands as $user)" >&2
	exit 2
fi
cg2="$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)"
if [ -z "$cg2" ]; then
	echo "bench-user.sh: no cgroup2 mount to count CPU in" >&2
	exit 2
fi
tmp="$(mktemp -d)"
cgroot="$cg2/bench-user-$$"
mkdir "$cgroot"
cleanup() {
	rmdir "$cgroot"/c* "$cgroot" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
chmod 755 "$tmp"

bin="$tmp/bin"
if command -v artexec >/dev/null && command -v artq >/dev/null; then
	bin="$(dirname "$(command -v artexec)")"
else
	CGO_ENABLED=0 go build -o "$bin/" ./cmd/artexec ./cmd/artexec-cli ./cmd/artexec-shim ./cmd/artq
	chmod -R a+rx "$bin"
fi
builds=("this:$bin")
[ -z "${BASELINE:-}" ] || builds+=("baseline:$BASELINE")

# The user's scratch: a workspace and the drain's task file.
mkdir -p "$tmp/ws"
for ((i = 0; i < tasks; i++)); do
	echo '{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}'
done >"$tmp/tasks.jsonl"
chown -R "$user" "$tmp/ws"
chmod 644 "$tmp/tasks.jsonl"

# one BIN MODE: RUNS one-shot runs; drain BIN MODE: one drain of TASKS.
cat >"$tmp/one.sh" <<'EOF'
#!/usr/bin/env bash
cd "$4"
for ((i = 0; i < $3; i++)); do "$1/artexec" run --isolation "$2" --allow true -- true >/dev/null || exit 1; done
EOF
cat >"$tmp/drain.sh" <<'EOF'
#!/usr/bin/env bash
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
mkdir "$d/ws"
"$1/artq" enqueue --dir "$d/q" --batch <"$3" >/dev/null
"$1/artq" work --dir "$d/q" --drain -q -j 8 --allow true --workspace "$d/ws" --isolation "$2"
EOF
chmod 755 "$tmp/one.sh" "$tmp/drain.sh"

seq=0
# measure KEY CMD...: CPU (µs) and wall (ns) of CMD run as the user in a
# fresh cgroup, appended to cpu[KEY] and wall[KEY].
declare -A cpu wall
measure() {
	local key="$1"
	shift
	seq=$((seq + 1))
	local cg="$cgroot/c$seq"
	mkdir "$cg"
	local t0 t1
	t0=$(date +%s%N)
	(echo "$BASHPID" >"$cg/cgroup.procs" && exec runuser -u "$user" -- "$@")
	t1=$(date +%s%N)
	cpu[$key]+=" $(awk '$1 == "usage_usec" {print $2}' "$cg/cpu.stat")"
	wall[$key]+=" $((t1 - t0))"
	rmdir "$cg"
}

for ((r = 0; r < rounds; r++)); do
	for b in "${builds[@]}"; do
		for mode in none landlock strict; do
			measure "${b%%:*} one $mode" "$tmp/one.sh" "${b#*:}" "$mode" "$runs" "$tmp/ws"
		done
		for mode in none landlock; do
			measure "${b%%:*} drain $mode" "$tmp/drain.sh" "${b#*:}" "$mode" "$tmp/tasks.jsonl"
		done
	done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# paired A B: median over rounds of A's value over B's, same round.
paired() {
	paste <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) | awk '{print $1/$2}' | sort -g |
		awk '{v[NR]=$1} END {printf "%.2f", (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}

echo "as $user: $rounds rounds; one-shot: $runs runs per round; drain: $tasks tasks, -j 8"
printf "%-34s %12s %14s %16s\n" "command" "CPU/run µs" "CPU / none" "paired / none"
for b in "${builds[@]}"; do
	k="${b%%:*}"
	for mode in none landlock strict; do
		c="$(median "${cpu[$k one $mode]}")"
		n="$(median "${cpu[$k one none]}")"
		printf "%-34s %12.0f %14.2f %16s\n" "$k: artexec run ($mode)" "$(awk -v c="$c" -v r="$runs" 'BEGIN {print c / r}')" \
			"$(awk -v a="$c" -v b="$n" 'BEGIN {print a / b}')" "$(paired "${cpu[$k one $mode]}" "${cpu[$k one none]}")"
	done
done
printf "%-34s %12s %14s %16s %10s\n" "drain" "CPU/task µs" "paired / none" "tasks/s" "/ none"
for b in "${builds[@]}"; do
	k="${b%%:*}"
	for mode in none landlock; do
		c="$(median "${cpu[$k drain $mode]}")"
		w="$(median "${wall[$k drain $mode]}")"
		wn="$(median "${wall[$k drain none]}")"
		printf "%-34s %12.0f %14s %16.0f %10.2f\n" "$k: artq work -j 8 ($mode)" "$(awk -v c="$c" -v t="$tasks" 'BEGIN {print c / t}')" \
			"$(paired "${cpu[$k drain $mode]}" "${cpu[$k drain none]}")" \
			"$(awk -v w="$w" -v t="$tasks" 'BEGIN {print t * 1e9 / w}')" "$(awk -v a="$wn" -v b="$w" 'BEGIN {print a / b}')"
	done
done
