#!/usr/bin/env bash
# What observability export costs a drain: 2,000 queued `true` tasks
# drained by one `artq work --drain -j 2`, in interleaved rounds, with
#   none     no --events, no --metrics
#   jsonl    --events jsonl:FILE (the local sink, for comparison)
#   otlp     --events otlphttp://JAEGER and --metrics 127.0.0.1:PORT, with a
#            real Jaeger all-in-one receiving the log records and spans
#   down     the same with nothing listening at the OTLP address
# and prints, per mode, the median wall seconds, tasks/s and CPU ms per task
# over the rounds, and each mode's tasks/s ratio to none from the same run.
# CPU is user+system of the worker and everything it waited for, the
# exporter process (artobs-otlp, on the same cores) included; the
# exporter's own share is also printed apart (it runs under /usr/bin/time
# through a wrapper installed where artq finds it). Jaeger's CPU is not
# counted.
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
mkdir -p "$work/real"
go build -trimpath -o "$work/real/" ./cmd/artobs-otlp
# artq runs the artobs-otlp beside it: this one times the real exporter.
cat >"$work/bin/artobs-otlp" <<SH
#!/bin/sh
exec /usr/bin/time -f "%U %S" -a -o "\$ART_BENCH_EXPORTER_TIME" "$work/real/artobs-otlp" "\$@"
SH
chmod +x "$work/bin/artobs-otlp"
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

drain() { # mode round -> "wall cpu exporter-cpu" seconds
	local home="$work/$1-$2" args=()
	mkdir -p "$home"
	ART_HOME="$home" artq enqueue --batch <"$work/tasks.jsonl" >/dev/null
	case "$1" in
	jsonl) args=(--events "jsonl:$home/ev.jsonl") ;;
	otlp) args=(--events "otlphttp://$otlp" --metrics "127.0.0.1:$(port)") ;;
	down) args=(--events "otlphttp://$down" --metrics "127.0.0.1:$(port)") ;;
	esac
	: >"$home/exporter.time"
	ART_BENCH_EXPORTER_TIME="$home/exporter.time" ART_HOME="$home" /usr/bin/time -f "%e %U %S" -o "$home/time" artq work --drain -q -j 2 --allow true --workspace "$home" "${args[@]}" 2>"$home/stderr"
	ART_HOME="$home" artq status --summary | grep -q "\"succeeded\":$tasks" || { echo "bench-otel: $1 round $2 did not succeed every task" >&2; cat "$home/stderr" >&2; exit 1; }
	x=$(awk '{s += $1 + $2} END {printf "%.3f", s}' "$home/exporter.time")
	awk -v x="$x" '{printf "%.3f %.3f %s\n", $1, $2+$3, x}' "$home/time"
	rm -rf "$home"
}

awk -v n="$tasks" 'BEGIN { for (i = 0; i < n; i++) print "{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"Task\",\"program\":\"true\"}" }' >"$work/tasks.jsonl"
modes=(none jsonl otlp down)
declare -A walls cpus xcpus
for r in $(seq "$rounds"); do
	for m in "${modes[@]}"; do
		read -r w c x < <(drain "$m" "$r")
		walls[$m]+="$w "
		cpus[$m]+="$c "
		xcpus[$m]+="$x "
		echo "round $r $m ${w}s wall ${c}s cpu (${x}s of it the exporter's)" >&2
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(echo "${walls[none]}" | median)
echo "tasks=$tasks rounds=$rounds (medians; one artq work --drain -j 2; load $(cut -d' ' -f1-3 /proc/loadavg))"
for m in "${modes[@]}"; do
	w=$(echo "${walls[$m]}" | median)
	c=$(echo "${cpus[$m]}" | median)
	x=$(echo "${xcpus[$m]}" | median)
	awk -v m="$m" -v w="$w" -v c="$c" -v x="$x" -v b="$base" -v n="$tasks" 'BEGIN {printf "%-6s %7.3fs %8.1f tasks/s  %.2fx of none  %.2f ms CPU/task (exporter %.2f)\n", m, w, n/w, b/w, 1000*c/n, 1000*x/n}'
done
