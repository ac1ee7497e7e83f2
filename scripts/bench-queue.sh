#!/usr/bin/env bash
# artq against the queues people already run, in one interleaved run:
# River on PostgreSQL, asynq on Redis (appendonly, appendfsync always) and
# goqite on SQLite (WAL, synchronous=FULL), every server started here on
# loopback in a temporary directory and stopped at the end, with durable
# settings; nats-server (JetStream, sync_interval always) for artq's NATS
# backend. The peers' drivers are the separate Go module scripts/benchq
# (the product's go.mod never requires them); every peer's job runs `true`
# as a real process, as an artq task does.
#
#   scripts/bench-queue.sh [quick|full|nats] [ROUNDS]
#
#   quick   1 round, 500 tasks per drain, batch of 100,000, status over
#           200,000: about 5 minutes on 2 cores (the default)
#   full    3 rounds (or ROUNDS), 2,000 tasks per drain
#   nats    only artq's NATS drains with 1, 2 and 4 worker processes
#           (3 rounds or ROUNDS, 500 tasks each), no peers: tasks/s, CPU
#           per task of every process and of nats-server alone
#
# Environment: TASKS, BATCH, STATUS_N override the sizes; KEEP=1 keeps the
# work directory (logs, data) for a look afterwards.
#
# Figures, each the median over the rounds, each ratio from the same run:
#   drain    tasks/s and CPU per task (ms: every process — the workers,
#            their per-task processes, `true` itself, and the server's whole
#            process tree) for 2,000 queued tasks at concurrency 1, 2 and 8
#            with one worker, and for 1, 2 and 4 artq worker processes at
#            concurrency 1 each (file and NATS backends)
#   batch    tasks/s of one enqueue process for BATCH tasks
#   status   wall ms of one `artq status --summary` process over STATUS_N
#            queued tasks, against each peer's count of queued jobs (a
#            process too; the query's own time beside it)
#
# Needs: go, PostgreSQL's initdb/pg_ctl/postgres, redis-server; as root it
# installs the Debian packages postgresql and redis-server when missing.
# nats-server is built from the module proxy (the version the tests embed:
# Debian's is older than sync_interval).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode="${1:-quick}"
case "$mode" in
quick) rounds="${2:-1}" tasks="${TASKS:-500}" ;;
full) rounds="${2:-3}" tasks="${TASKS:-2000}" ;;
nats) rounds="${2:-3}" tasks="${TASKS:-500}" ;;
*)
	echo "usage: scripts/bench-queue.sh [quick|full|nats] [ROUNDS]" >&2
	exit 2
	;;
esac
batch="${BATCH:-100000}"
statusn="${STATUS_N:-200000}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

# --- tools -----------------------------------------------------------------
pgbin=""
for d in /usr/lib/postgresql/*/bin; do
	[ -x "$d/initdb" ] && pgbin=$d
done
need=()
if [ "$mode" != nats ]; then
	[ -n "$pgbin" ] || command -v initdb >/dev/null || need+=(postgresql)
	command -v redis-server >/dev/null || need+=(redis-server)
fi
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "bench-queue: installing ${need[*]} (Debian packages)" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
		for d in /usr/lib/postgresql/*/bin; do
			[ -x "$d/initdb" ] && pgbin=$d
		done
	else
		echo "bench-queue: missing ${need[*]}: install them (Debian: apt-get install ${need[*]}) or run as root" >&2
		exit 1
	fi
fi
[ -n "$pgbin" ] || [ "$mode" = nats ] || pgbin=$(dirname "$(command -v initdb)")

work=$(mktemp -d /tmp/bench-queue.XXXXXX)
chmod 755 "$work"
pids=()
pgdata=""
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$pgdata" ] && [ -f "$pgdata/postmaster.pid" ]; then
		asdb "$pgbin/pg_ctl" -D "$pgdata" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	if [ "${KEEP:-}" = 1 ]; then
		echo "bench-queue: kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# PostgreSQL refuses to run as root: as root, run it as the postgres user.
asdb() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

echo "bench-queue: building artq, artexec-shim, the peers' driver and nats-server" >&2
mkdir -p "$work/bin"
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/artq ./cmd/artexec-shim
(cd scripts/benchq && CGO_ENABLED=0 go build -o "$work/bin/benchq" . &&
	CGO_ENABLED=0 go build -o "$work/bin/nats-server" github.com/nats-io/nats-server/v2)
artq=$work/bin/artq
benchq=$work/bin/benchq
export PATH="$work/bin:$PATH"

waitport() { # port name
	for _ in $(seq 200); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "bench-queue: $2 did not listen on 127.0.0.1:$1" >&2
	exit 1
}

# --- servers ---------------------------------------------------------------
if [ "$mode" != nats ]; then
pgdata=$work/pg
mkdir -p "$pgdata"
[ "$(id -u)" = 0 ] && chown postgres "$pgdata"
pgport=$($benchq port)
asdb "$pgbin/initdb" -D "$pgdata" -A trust -U bench -E UTF8 >"$work/initdb.log" 2>&1
asdb "$pgbin/pg_ctl" -D "$pgdata" -l "$pgdata/log" -w \
	-o "-c listen_addresses=127.0.0.1 -p $pgport -k $pgdata -c fsync=on -c synchronous_commit=on -c max_connections=200" \
	start >/dev/null
pgpid=$(head -1 "$pgdata/postmaster.pid")
dsn="postgres://bench@127.0.0.1:$pgport/postgres?sslmode=disable"

mkdir -p "$work/redis"
rport=$($benchq port)
redis-server --port "$rport" --bind 127.0.0.1 --dir "$work/redis" --appendonly yes \
	--appendfsync always --save '' --daemonize no --logfile "$work/redis/log" &
rpid=$!
pids+=("$rpid")
waitport "$rport" redis-server
fi

nport=$($benchq port)
mkdir -p "$work/nats"
cat >"$work/nats/server.conf" <<EOF
listen: 127.0.0.1:$nport
jetstream {
	store_dir: "$work/nats/store"
	sync_interval: always
	# one atomic batch holds a whole drain's enqueue (full: 2,000 tasks)
	limits { batch { max_msgs: 100000 } }
}
EOF
nats-server -c "$work/nats/server.conf" >"$work/nats/log" 2>&1 &
npid=$!
pids+=("$npid")
waitport "$nport" nats-server
nats="nats://127.0.0.1:$nport"

# --- work --------------------------------------------------------------------
mkdir -p "$work/ws"
manifest='{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}'
gen() { # n file
	[ -f "$2" ] || awk -v n="$1" -v m="$manifest" 'BEGIN { for (i = 0; i < n; i++) print m }' >"$2"
}
gen "$tasks" "$work/tasks.jsonl"
if [ "$mode" != nats ]; then
	gen "$batch" "$work/batch.jsonl"
	gen "$statusn" "$work/status.jsonl"
fi
results=$work/results
: >"$results"

# record KEY TASKS SERVERS -- ARGV: measure, append tasks/s and CPU ms/task.
record() {
	local key=$1 n=$2 servers=$3 procs=$4
	shift 5
	local out in=()
	[ -n "${STDIN:-}" ] && in=(-stdin "$STDIN")
	out=$($benchq measure -servers "$servers" -procs "$procs" "${in[@]}" -- "$@")
	read -r wall cpu _ server <<<"$out"
	awk -v k="$key" -v n="$n" -v w="$wall" -v c="$cpu" -v s="$server" \
		'BEGIN { printf "%s tps %.1f\n%s cpu_ms %.4f\n%s server_ms %.4f\n", k, n / w, k, c * 1000 / n, k, s * 1000 / n }' >>"$results"
	echo "  $key: $(tail -3 "$results" | awk '{ printf "%s %s  ", $2, $3 }')" >&2
}

seq_no=0
artq_drain() { # backend workers concurrency
	local b=$1 w=$2 c=$3 flags servers=""
	seq_no=$((seq_no + 1))
	if [ "$b" = file ]; then
		rm -rf "$work/q"
		flags=(--dir "$work/q")
	else
		flags=(--backend "$nats" --queue "d$seq_no")
		servers=$npid
	fi
	"$artq" "${flags[@]}" enqueue --batch <"$work/tasks.jsonl" >/dev/null
	(cd "$work/ws" && record "drain/artq-$b/w$w/c$c" "$tasks" "$servers" "$w" -- \
		"$artq" "${flags[@]}" work --drain -q -j "$c" --allow true)
}

# peer_target PEER: sets target (the driver's flags for PEER's server) and
# servers (the server's pid, whose process tree counts toward CPU).
peer_target() {
	case $1 in
	river) target=(-dsn "$dsn") servers=$pgpid ;;
	asynq) target=(-addr "127.0.0.1:$rport") servers=$rpid ;;
	goqite) target=(-db "$work/goqite.db") servers="" ;;
	esac
}

peer_drain() { # peer concurrency
	local p=$1 c=$2 target servers
	peer_target "$p"
	$benchq "$p" "${target[@]}" -op reset
	$benchq "$p" "${target[@]}" -op enqueue -n "$tasks"
	record "drain/$p/w1/c$c" "$tasks" "$servers" 1 -- $benchq "$p" "${target[@]}" -op drain -n "$tasks" -c "$c"
}

peer_batch() { # peer n
	local p=$1 n=$2 target servers
	peer_target "$p"
	$benchq "$p" "${target[@]}" -op reset
	record "batch/$p" "$n" "$servers" 1 -- $benchq "$p" "${target[@]}" -op enqueue -n "$n"
}

echo "bench-queue: $mode, $rounds round(s), $tasks tasks per drain, batch $batch, status over $statusn; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ "$mode" = nats ]; then
	for r in $(seq "$rounds"); do
		echo "round $r of $rounds" >&2
		for w in 1 2 4; do
			artq_drain nats "$w" 1
		done
	done
	sort -k1,1 -k2,2 -k3,3g "$results" | awk -f "$root/scripts/medians.awk" | sort >"$work/medians"
	get() { awk -v k="$1" -v m="$2" '$1 == k && $2 == m { print $3 }' "$work/medians"; }
	echo
	echo "nats: medians of $rounds round(s), $tasks tasks per drain; $(date -u +%Y-%m-%d), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
	echo
	echo "| workers | tasks/s | CPU ms per task, all processes | of which nats-server | tasks/s / 1 worker |"
	echo "|---|---|---|---|---|"
	for w in 1 2 4; do
		k=drain/artq-nats/w$w/c1
		echo "| $w | $(get $k tps) | $(get $k cpu_ms) | $(get $k server_ms) | $(awk -v a="$(get $k tps)" -v b="$(get drain/artq-nats/w1/c1 tps)" 'BEGIN { printf "%.2f×", a / b }') |"
	done
	exit 0
fi
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	for c in 1 2 8; do
		artq_drain file 1 "$c"
		artq_drain nats 1 "$c"
		for p in river asynq goqite; do
			peer_drain "$p" "$c"
		done
	done
	for w in 2 4; do
		artq_drain file "$w" 1
		artq_drain nats "$w" 1
	done
	rm -rf "$work/qb"
	STDIN=$work/batch.jsonl record batch/artq "$batch" "" 1 -- "$artq" --dir "$work/qb" enqueue --batch
	for p in river asynq goqite; do
		peer_batch "$p" "$batch"
	done
done

# Status reads: STATUS_N queued tasks in each, loaded once; then rounds of
# reads, interleaved, five of each per round.
echo "bench-queue: loading $statusn queued tasks into each" >&2
rm -rf "$work/qs"
"$artq" --dir "$work/qs" enqueue --id probe -- true >/dev/null
"$artq" --dir "$work/qs" enqueue --batch <"$work/status.jsonl" >/dev/null
$benchq river -dsn "$dsn" -op reset && $benchq river -dsn "$dsn" -op enqueue -n "$statusn"
$benchq asynq -addr "127.0.0.1:$rport" -op reset && $benchq asynq -addr "127.0.0.1:$rport" -op enqueue -n "$statusn"
$benchq goqite -db "$work/goqite.db" -op reset && $benchq goqite -db "$work/goqite.db" -op enqueue -n "$statusn"
ms() { # key -- argv: one process, its wall ms
	local key=$1 out
	shift 2
	out=$($benchq measure -- "$@")
	echo "$key ms $(awk '{ printf "%.2f", $1 * 1000 }' <<<"$out")" >>"$results"
}
query() { # key -- argv: the peer's count, its query ms
	local key=$1 out
	shift 2
	out=$("$@")
	echo "$key ms $(awk '{ printf "%.2f", $1 * 1000 }' <<<"$out")" >>"$results"
}
for r in $(seq "$rounds"); do
	for _ in 1 2 3 4 5; do
		ms status/artq-summary -- "$artq" --dir "$work/qs" status --summary
		ms status/artq-id -- "$artq" --dir "$work/qs" status probe
		ms status/river -- $benchq river -dsn "$dsn" -op count
		query status/river-query -- $benchq river -dsn "$dsn" -op count
		ms status/asynq -- $benchq asynq -addr "127.0.0.1:$rport" -op count
		query status/asynq-query -- $benchq asynq -addr "127.0.0.1:$rport" -op count
		ms status/goqite -- $benchq goqite -db "$work/goqite.db" -op count
		query status/goqite-query -- $benchq goqite -db "$work/goqite.db" -op count
	done
done

# --- report ------------------------------------------------------------------
medians=$work/medians
sort -k1,1 -k2,2 -k3,3g "$results" | awk -f "$root/scripts/medians.awk" | sort >"$medians"
get() { awk -v k="$1" -v m="$2" '$1 == k && $2 == m { print $3 }' "$medians"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "—"; else printf "%.2f×", a / b }'; }

echo
echo "$mode: medians of $rounds round(s), $tasks tasks per drain; $(date -u +%Y-%m-%d), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo
echo "Drain, one worker: tasks/s (CPU ms per task, all processes incl. the server)"
echo
echo "| concurrency | artq file | artq NATS | River | asynq | goqite | file / River | NATS / River |"
echo "|---|---|---|---|---|---|---|---|"
for c in 1 2 8; do
	row="| $c"
	for k in artq-file artq-nats river asynq goqite; do
		row="$row | $(get "drain/$k/w1/c$c" tps) ($(get "drain/$k/w1/c$c" cpu_ms))"
	done
	row="$row | $(ratio "$(get drain/artq-file/w1/c$c tps)" "$(get drain/river/w1/c$c tps)")"
	row="$row | $(ratio "$(get drain/artq-nats/w1/c$c tps)" "$(get drain/river/w1/c$c tps)") |"
	echo "$row"
done
echo
echo "artq worker processes, concurrency 1 each: tasks/s (CPU ms per task)"
echo
echo "| workers | file | NATS | file / 1 worker | NATS / 1 worker |"
echo "|---|---|---|---|---|"
for w in 1 2 4; do
	echo "| $w | $(get "drain/artq-file/w$w/c1" tps) ($(get "drain/artq-file/w$w/c1" cpu_ms)) | $(get "drain/artq-nats/w$w/c1" tps) ($(get "drain/artq-nats/w$w/c1" cpu_ms)) | $(ratio "$(get drain/artq-file/w$w/c1 tps)" "$(get drain/artq-file/w1/c1 tps)") | $(ratio "$(get drain/artq-nats/w$w/c1 tps)" "$(get drain/artq-nats/w1/c1 tps)") |"
done
echo
echo "Batch enqueue of $batch, one process: tasks/s (CPU ms per task)"
echo
echo "| artq | River | asynq (64 concurrent) | goqite | artq / River |"
echo "|---|---|---|---|---|"
echo "| $(get batch/artq tps) ($(get batch/artq cpu_ms)) | $(get batch/river tps) ($(get batch/river cpu_ms)) | $(get batch/asynq tps) ($(get batch/asynq cpu_ms)) | $(get batch/goqite tps) ($(get batch/goqite cpu_ms)) | $(ratio "$(get batch/artq tps)" "$(get batch/river tps)") |"
echo
echo "Status over $statusn queued tasks: wall ms of one process (the query alone)"
echo
echo "| artq status --summary | artq status ID | River | asynq | goqite | artq summary / River |"
echo "|---|---|---|---|---|---|"
echo "| $(get status/artq-summary ms) | $(get status/artq-id ms) | $(get status/river ms) ($(get status/river-query ms)) | $(get status/asynq ms) ($(get status/asynq-query ms)) | $(get status/goqite ms) ($(get status/goqite-query ms)) | $(ratio "$(get status/artq-summary ms)" "$(get status/river ms)") |"
