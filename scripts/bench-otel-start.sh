#!/usr/bin/env bash
# What OpenTelemetry export costs the tools that do not export: binary
# sizes (static, -trimpath, -ldflags='-s -w', as `make build`) and the
# start of `artq --help` and `artagent --help` (CPU of the process, package
# initialisers run), for this tree against REF (default: main), in
# interleaved rounds, medians.
#
#   scripts/bench-otel-start.sh [REF] [ROUNDS]     # ROUNDS default 5; 60 runs a round
set -euo pipefail
cd "$(dirname "$0")/.."
ref="${1:-main}"
rounds="${2:-5}"
runs=60
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/before" "$tmp/after"
git archive "$ref" | tar -x -C "$tmp/src"
(cd "$tmp/src" && go build -trimpath -ldflags='-s -w' -o "$tmp/before/" ./cmd/artq ./cmd/artagent ./cmd/artexec)
mains=(./cmd/artq ./cmd/artagent ./cmd/artexec)
[ -d cmd/artobs-otlp ] && mains+=(./cmd/artobs-otlp)
go build -trimpath -ldflags='-s -w' -o "$tmp/after/" "${mains[@]}"
echo "sizes (bytes), $ref -> this tree:"
for b in artq artagent artexec artobs-otlp; do
	printf '  %-12s %12s -> %s\n' "$b" "$( [ -f "$tmp/before/$b" ] && stat -c %s "$tmp/before/$b" || echo -)" "$( [ -f "$tmp/after/$b" ] && stat -c %s "$tmp/after/$b" || echo -)"
done
cpu() { # binary -> ms of CPU per `BIN --help`
	/usr/bin/time -f "%U %S" -o "$tmp/t" sh -c 'i=0; while [ $i -lt '"$runs"' ]; do "$0" --help >/dev/null; i=$((i+1)); done' "$1"
	awk -v n="$runs" '{printf "%.3f\n", 1000*($1+$2)/n}' "$tmp/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for tool in artq artagent; do
	: >"$tmp/before.$tool"
	: >"$tmp/after.$tool"
	for _ in $(seq "$rounds"); do
		for w in before after; do cpu "$tmp/$w/$tool" >>"$tmp/$w.$tool"; done
	done
	b=$(median <"$tmp/before.$tool")
	a=$(median <"$tmp/after.$tool")
	ib=$(GODEBUG=inittrace=1 "$tmp/before/$tool" --help 2>&1 >/dev/null | grep -c '^init ')
	ia=$(GODEBUG=inittrace=1 "$tmp/after/$tool" --help 2>&1 >/dev/null | grep -c '^init ')
	echo "$tool --help: $b -> $a ms CPU (median of $rounds rounds of $runs runs), $ib -> $ia package inits"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
