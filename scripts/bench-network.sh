#!/usr/bin/env bash
# Cost of artexec's network modes, against baselines measured in the same
# interleaved run (each figure the median over rounds):
#   1. throughput of a 100 MB download on loopback: curl on the host
#      straight to the server, against curl inside a strict task under
#      --network allow through art's proxy (CONNECT, and plain-HTTP
#      forwarding), curl's own speed_download;
#   2. the extra cost of one proxied connection over a direct one (a new
#      connection and one small request each; internal/tools/netbench conn,
#      in-process, interleaved);
#   3. start cost of `artexec run --isolation strict -- true` with
#      --network host (no network namespace), none (a namespace, lo down)
#      and loopback (lo up), against bwrap --unshare-all with and without
#      --share-net.
#
# Usage: scripts/bench-network.sh [ROUNDS [RUNS_PER_ROUND]]
# Needs Linux with user namespaces, Landlock, curl, and bwrap (Debian:
# bubblewrap) for its rows (skipped without it). Builds artexec and
# artexec-shim.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${1:-9}"
runs="${2:-20}"
size=$((100 * 1000 * 1000))
tmp="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT

CGO_ENABLED=0 go build -o "$tmp/" ./cmd/artexec ./cmd/artexec-cli ./cmd/artexec-shim ./internal/tools/netbench
artexec="$tmp/artexec"
true_bin="$(command -v true)"
ws="$tmp/ws"
mkdir -p "$ws"

"$tmp/netbench" serve "$size" >"$tmp/port" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port="$(<"$tmp/port")"
url="http://127.0.0.1:$port/big"

# Each measurement appends "NAME METRIC VALUE" to $tmp/samples.
sample() { echo "$1 $2 $3" >>"$tmp/samples"; }
speed_in_task() { # curl flags...: speed_download (bytes/s) of curl inside a strict task through the proxy
	"$artexec" -o json run --workspace "$ws" --isolation strict --allow-host "127.0.0.1:$port" --allow curl -- \
		curl -sS --noproxy '' -x http://127.0.0.1:3128 "$@" -o /dev/null -w '%{speed_download}' "$url" |
		grep -o '"output":"[0-9.]*"' | grep -o '[0-9.]*'
}
now() { date +%s%N; }
start_cost() { # name command...: mean wall µs of runs starts
	local t0 t1
	t0=$(now)
	for ((k = 0; k < runs; k++)); do "${@:2}" >/dev/null; done
	t1=$(now)
	sample "$1" start_us $(((t1 - t0) / runs / 1000))
}
have_bwrap=false
command -v bwrap >/dev/null 2>&1 && have_bwrap=true
bw=(bwrap --unshare-all --new-session --die-with-parent --ro-bind / / --proc /proc --dev /dev)

for ((r = 0; r < rounds; r++)); do
	sample direct MBps "$(curl -sS -o /dev/null -w '%{speed_download}' "$url" | awk '{printf "%.1f", $1/1e6}')"
	sample proxy-connect MBps "$(speed_in_task -p | awk '{printf "%.1f", $1/1e6}')"
	sample proxy-forward MBps "$(speed_in_task | awk '{printf "%.1f", $1/1e6}')"
	"$tmp/netbench" conn 200 | while read -r k v; do sample connection "$k" "$v"; done
	start_cost strict-host "$artexec" run --workspace "$ws" --isolation strict --network host -- "$true_bin"
	start_cost strict-none "$artexec" run --workspace "$ws" --isolation strict --network none -- "$true_bin"
	start_cost strict-loopback "$artexec" run --workspace "$ws" --isolation strict --network loopback -- "$true_bin"
	if $have_bwrap; then
		start_cost bwrap-share-net "${bw[@]}" --share-net "$true_bin"
		start_cost bwrap-unshare-net "${bw[@]}" "$true_bin"
	fi
done

sort -k1,1 -k2,2 -k3,3g "$tmp/samples" | awk -f scripts/medians.awk | sort >"$tmp/medians"
get() { awk -v k="$1" -v m="$2" '$1 == k && $2 == m {print $3}' "$tmp/medians"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
echo "# bench-network: median of $rounds rounds ($runs starts each), $(nproc) cores, $(uname -r), load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-34s %s\n' "download 100 MB direct (MB/s)" "$(get direct MBps)"
printf '%-34s %s (%sx direct)\n' "through the proxy, CONNECT" "$(get proxy-connect MBps)" "$(ratio "$(get proxy-connect MBps)" "$(get direct MBps)")"
printf '%-34s %s (%sx direct)\n' "through the proxy, forwarding" "$(get proxy-forward MBps)" "$(ratio "$(get proxy-forward MBps)" "$(get direct MBps)")"
printf '%-34s %s µs direct, %s µs proxied: +%s µs\n' "one connection, p50" "$(get connection direct_us)" "$(get connection proxied_us)" "$(get connection extra_us)"
for n in strict-host strict-none strict-loopback bwrap-share-net bwrap-unshare-net; do
	[ -n "$(get "$n" start_us)" ] && printf '%-34s %s µs\n' "start $n" "$(get "$n" start_us)"
done
printf '%-34s %s µs\n' "loopback over host (strict)" "$(($(get strict-loopback start_us) - $(get strict-host start_us)))"
printf '%-34s %s µs\n' "loopback over none (strict)" "$(($(get strict-loopback start_us) - $(get strict-none start_us)))"
if $have_bwrap; then
	printf '%-34s %s µs\n' "bwrap --unshare-net over share-net" "$(($(get bwrap-unshare-net start_us) - $(get bwrap-share-net start_us)))"
fi
