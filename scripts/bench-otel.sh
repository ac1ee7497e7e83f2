#!/usr/bin/env bash
# What observability export costs a drain: 2,000 queued `true` tasks
# drained by one `artq work --drain -j 2`, in interleaved rounds, with
#   none     no --events, no --metrics
#   jsonl    --events jsonl:FILE (the local sink, for comparison)
#   otlp     --events otlphttp://JAEGER and --metrics 127.0.0.1:PORT, with a
#            real Jaeger all-in-one receiving the log records and spans
#   down     the same with nothing listening at the OTLP address
# and prints, per mode, the median tasks/s and wall seconds over the rounds
# and each mode's ratio to none from the same run.
#
#   scripts/bench-otel.sh [ROUNDS]      # default 3 rounds; TASKS=2000
#
# Needs scripts/jaeger.sh's binary (built once, cached).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
tasks="${TASKS:-2000}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
work="$(mktemp -d)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
go build -trimpath -o "$work/bin/" ./cmd/artq ./cmd/artexec-shim
jaeger="$(scripts/jaeger.sh)"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
otlp="127.0.0.1:$(port)"
cat >"$work/jaeger.yaml" <<YAML
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
    logs: {receivers: [otlp], exporters: [nop]}
  telemetry: {metrics: {level: none}, logs: {level: warn}}
extensions:
  jaeger_storage: {backends: {mem: {memory: {max_traces: 100000}}}}
  jaeger_query: {storage: {traces: mem}, http: {endpoint: "127.0.0.1:$(port)"}, grpc: {endpoint: "127.0.0.1:$(port)"}}
receivers:
  otlp: {protocols: {http: {endpoint: "$otlp"}}}
processors:
  batch: {}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
  nop: {}
YAML
"$jaeger" --config "$work/jaeger.yaml" >"$work/jaeger.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	(echo >/dev/tcp/"${otlp%:*}"/"${otlp#*:}") 2>/dev/null && break
	sleep 0.1
done
down="127.0.0.1:$(port)"
export PATH="$work/bin:$PATH" ART_EVENTS=

drain() { # mode round -> wall seconds
	local home="$work/$1-$2" args=()
	mkdir -p "$home"
	ART_HOME="$home" artq enqueue --batch <"$work/tasks.jsonl" >/dev/null
	case "$1" in
	jsonl) args=(--events "jsonl:$home/ev.jsonl") ;;
	otlp) args=(--events "otlphttp://$otlp" --metrics "127.0.0.1:$(port)") ;;
	down) args=(--events "otlphttp://$down" --metrics "127.0.0.1:$(port)") ;;
	esac
	local t0 t1
	t0=$(date +%s.%N)
	ART_HOME="$home" artq work --drain -q -j 2 --allow true --workspace "$home" "${args[@]}" 2>"$home/stderr"
	t1=$(date +%s.%N)
	ART_HOME="$home" artq status --summary | grep -q "\"succeeded\":$tasks" || { echo "bench-otel: $1 round $2 did not succeed every task" >&2; cat "$home/stderr" >&2; exit 1; }
	echo "$t0 $t1" | awk '{printf "%.3f\n", $2-$1}'
	rm -rf "$home"
}

awk -v n="$tasks" 'BEGIN { for (i = 0; i < n; i++) print "{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"Task\",\"program\":\"true\"}" }' >"$work/tasks.jsonl"
modes=(none jsonl otlp down)
declare -A walls
for r in $(seq "$rounds"); do
	for m in "${modes[@]}"; do
		w=$(drain "$m" "$r")
		walls[$m]+="$w "
		echo "round $r $m ${w}s" >&2
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(echo "${walls[none]}" | median)
echo "tasks=$tasks rounds=$rounds (median wall seconds of one artq work --drain -j 2)"
for m in "${modes[@]}"; do
	w=$(echo "${walls[$m]}" | median)
	awk -v m="$m" -v w="$w" -v b="$base" -v n="$tasks" 'BEGIN {printf "%-6s %7.3fs %8.1f tasks/s  %.2fx of none\n", m, w, n/w, b/w}'
done
