#!/usr/bin/env bash
# bench-web.sh: the web view over a queue of TASKS tasks (default 200000)
# with its state index, as a client sees it, round by round and
# interleaved with the peer that reads the same index: `artq status
# --state queued -o json | head -n 50`, the CLI's first page of the same
# list (a whole process). Prints the median of ROUNDS (default 9) of each,
# then artobs-web's peak resident memory (VmHWM) after the rounds and after
# 8 concurrent first-page requests.
# Usage: scripts/bench-web.sh [TASKS] [ROUNDS]
set -euo pipefail
tasks=${1:-200000}
rounds=${2:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$work/" ./cmd/artq ./cmd/artobs ./cmd/artobs-web)
home="$work/home"
awk -v n="$tasks" 'BEGIN { for (i = 0; i < n; i++) printf "{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"Task\",\"id\":\"t%07d\",\"program\":\"true\",\"args\":[\"%d\"]}\n", i, i }' >"$work/batch.jsonl"
ART_HOME="$home" "$work/artq" --queue big enqueue --batch -o text <"$work/batch.jsonl" >/dev/null
ART_HOME="$home" "$work/artq" --queue big enqueue --id late -- true >/dev/null # a tail after the index
"$work/artobs" --dir "$home" serve --listen 127.0.0.1:0 2>"$work/serve.log" &
pid=$!
for _ in $(seq 100); do grep -q 'on http://' "$work/serve.log" 2>/dev/null && break; sleep 0.05; done
base=$(sed -n 's/.* on \(http:\/\/[0-9.:]*\)\/.*/\1/p' "$work/serve.log")
[ -n "$base" ] || { cat "$work/serve.log" >&2; exit 1; }

curlms() { # curlms PATH: "ttfb total" in ms; anything but a 200 stops the run
	curl -s -o /dev/null -w '%{http_code} %{time_starttransfer} %{time_total}\n' "$base$1" |
		awk -v p="$1" '$1 != 200 { print "bench-web: GET " p ": " $1 > "/dev/stderr"; exit 1 } { printf "%.1f %.1f", $2 * 1000, $3 * 1000 }'
}
wallms() {
	local TIMEFORMAT='%R' t
	t=$({ time "$@" >/dev/null 2>&1; } 2>&1 | tail -n 1)
	awk -v t="$t" 'BEGIN { printf "%.1f", t * 1000 }'
}
peer1() { ART_HOME="$home" "$work/artq" --queue big status t0100000 -o json; }
peer() { ART_HOME="$home" "$work/artq" --queue big status --state queued -o json | head -n 50; }
out="$work/runs"
: >"$out"
# The first chart replays the whole log; later ones are reused while the
# log is unchanged (lib/web ChartMaxAge).
echo "cold chart /queues/big: $(curlms /queues/big | cut -d' ' -f2) ms" >"$work/cold"
for ((r = 0; r < rounds; r++)); do
	for p in "/queues/big/tasks" "/api/queues/big/tasks" "/queues/big/tasks?state=queued" "/queues/big/tasks?page=100" "/queues/big" "/queues/big/tasks/t0100000"; do
		t=$(curlms "$p") || exit 1
		read -r ttfb total <<<"$t"
		echo "$p ttfb $ttfb" >>"$out"
		echo "$p total $total" >>"$out"
	done
	echo "artq-status-head-50 wall $(wallms peer)" >>"$out"
	echo "artq-status-ID wall $(wallms peer1)" >>"$out"
done
echo "| request ($tasks tasks, median of $rounds interleaved rounds) | metric | ms |"
echo "|---|---|---|"
sort -k1,1 -k2,2 -k3,3g "$out" | awk -f "$root/scripts/medians.awk" | sort | awk '{ printf "| `%s` | %s | %s |\n", $1, $2, $3 }'
echo
cat "$work/cold"
echo "artobs-web peak RSS after the rounds: $(awk '/VmHWM/ { print $2, $3 }' "/proc/$pid/status")"
for _ in $(seq 8); do curl -sf -o /dev/null "$base/queues/big/tasks" & done
wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null || true
echo "artobs-web peak RSS after 8 concurrent first pages: $(awk '/VmHWM/ { print $2, $3 }' "/proc/$pid/status")"
echo "state index: $(du -k "$home/queues/big/state.index" | cut -f1) KiB; log: $(du -k "$home/queues/big/events.log" | cut -f1) KiB"
