#!/usr/bin/env bash
# crash-queue.sh [N] — kill -9 soak for artq's log, recovery and worker.
#
# Runs N iterations (default $ART_CRASH_ITERS, else 200). Each starts one or
# two enqueuers and a worker (sometimes armed with a failpoint that kills it
# between claim and run, run and trace, or trace and terminal event), then
# SIGKILLs whatever is still running at a random moment, and checks:
#   - the log replays and fsck passes (exit 0; a torn tail is allowed);
#   - every enqueue that exited 0 is in the queue (no task lost);
#   - no task's attempts exceed its max_attempts.
# Failed tasks with attempts left are retried now and then, as a user would.
# At the end it drains the queue without killing and checks:
#   - every task succeeded;
#   - no two copies of one attempt ran at once (each run holds an flock on
#     its attempt's lock file; one that finds it held counts in
#     double_start, which must be 0);
#   - each run the tasks recorded (a marker line "ID ATTEMPT") was claimed by
#     a started event, an attempt is started again only after a requeue,
#     no attempt with a trace is ever started again, and every trace and
#     terminal event names its task's current claim (fencing).
# Then the batch case (ART_BATCH_KILLS kills, default N/10 but at least 8,
# of a 50,000-task enqueue --batch at random byte offsets and moments: no
# partial batch, idempotent re-runs) and the zombie re-claim scenario on
# NATS (ART_ZOMBIE_TRIALS, default 50, run as a Go test; 0 skips it).
# Uses the artq on PATH, which must be built with -tags failpoint (make
# crash builds bin/failpoint/artq and puts it first on PATH; a normal artq
# ignores ARTQ_FAILPOINT and is refused, exit 2), and jq. Prints what held
# and exits 1 on the first violated invariant.
set -euo pipefail
# The repository root, taken before the cd below: $0 may be relative.
root="$(cd "$(dirname "$0")/.." && pwd)"

n="${1:-${ART_CRASH_ITERS:-200}}"
command -v artq >/dev/null || { echo "crash-queue: artq not on PATH (run make crash, or go build -tags failpoint ./cmd/artq)" >&2; exit 2; }
command -v jq >/dev/null || { echo "crash-queue: needs jq" >&2; exit 2; }
work="$(mktemp -d)"
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
q="$work/q" ws="$work/ws"
mkdir -p "$ws"
cd "$work"
: >acked.txt

# Bash reports each SIGKILLed job on stderr; keep those notices out of the
# report by sending stderr to /dev/null and our own messages to fd 3.
exec 3>&2 2>/dev/null
fail() { echo "crash-queue: INVARIANT VIOLATED at iteration $i: $*" >&3; exit 1; }

# The failpoint build kills itself at its first write under torn-write:1;
# any other build would enqueue the task and let the soak test less.
probe=0
ARTQ_FAILPOINT=torn-write:1 artq --dir "$work/probe" enqueue -- true >/dev/null 2>&1 || probe=$?
if [ "$probe" -ne 137 ]; then
	echo "crash-queue: $(command -v artq) was built without -tags failpoint (ARTQ_FAILPOINT did not kill it); run make crash, or put an artq from go build -tags failpoint ./cmd/artq first on PATH" >&3
	exit 2
fi
rm -rf "$work/probe"

retry_failed() {
	artq --dir "$q" status -o json |
		jq -r 'select(.state == "failed" and .attempts < .max_attempts) | .id' |
		while read -r id; do artq --dir "$q" retry "$id" >/dev/null; done
}

next=0 kills=0 failpoints=0 lost=0
for ((i = 1; i <= n; i++)); do
	pids=()
	ids=()
	for ((k = 0; k < 1 + RANDOM % 2; k++)); do
		next=$((next + 1))
		id=$(printf 't%05d' "$next")
		need=$((1 + RANDOM % 3)) # the attempt that succeeds
		# Each run holds an flock on its attempt's lock file while it runs:
		# a second copy of the attempt running at once (a dead worker's
		# claim started late beside the new owner's) finds it taken.
		artq --dir "$q" enqueue --id "$id" --max-attempts 3 -- sh -c \
			"exec 9>>\"lock.\$ARTQ_TASK_ID.\$ARTQ_ATTEMPT\"; flock -n 9 || echo \"\$ARTQ_TASK_ID \$ARTQ_ATTEMPT\" >> doubles; echo \"\$ARTQ_TASK_ID \$ARTQ_ATTEMPT\" >> runs; sleep 0.0$((RANDOM % 6)); [ \"\$ARTQ_ATTEMPT\" -ge $need ]" \
			>/dev/null 2>&1 &
		pids+=($!)
		ids+=("$id")
	done
	fp=""
	if ((RANDOM % 10 < 4)); then
		fp=$(printf '%s\n' after-claim after-run after-trace | shuf -n 1)
		failpoints=$((failpoints + 1))
	fi
	ARTQ_FAILPOINT="$fp" artq --dir "$q" work --allow sh --workspace "$ws" --concurrency 2 --poll 50ms \
		>/dev/null 2>&1 &
	w=$!
	if [ -n "$fp" ]; then
		timeout 2 tail --pid="$w" -f /dev/null || true
	else
		sleep "0.$(printf '%03d' $((RANDOM % 250)))"
	fi
	kill -9 "$w" 2>/dev/null || true
	{ wait "$w"; } 2>/dev/null || true
	kills=$((kills + 1))
	for j in "${!pids[@]}"; do
		((RANDOM % 4 == 0)) && kill -9 "${pids[$j]}" 2>/dev/null || true
		if { wait "${pids[$j]}"; } 2>/dev/null; then
			echo "${ids[$j]}" >>acked.txt
		fi
	done

	artq --dir "$q" fsck >fsck.json || fail "fsck: $(cat fsck.json)"
	artq --dir "$q" status -o json >status.jsonl || fail "status failed"
	jq -r .id status.jsonl | sort >present.txt
	missing=$(sort acked.txt | comm -23 - present.txt | head -n 1)
	[ -z "$missing" ] || fail "acknowledged task $missing is lost"
	over=$(jq -r 'select(.attempts > .max_attempts) | .id' status.jsonl | head -n 1)
	[ -z "$over" ] || fail "task $over has more attempts than max_attempts"
	((RANDOM % 3 == 0)) && retry_failed
done

# Drain without killing until everything has finished.
for round in 1 2 3 4 5 6 7 8 9 10; do
	artq --dir "$q" work --drain --allow sh --workspace "$ws" --concurrency 2 >/dev/null 2>&1 ||
		fail "final drain exited $?"
	left=$(artq --dir "$q" status -o json | jq -r 'select(.state == "failed" and .attempts < .max_attempts) | .id' | wc -l)
	[ "$left" -eq 0 ] && break
	retry_failed
done
i=final
artq --dir "$q" status -o json >status.jsonl
bad=$(jq -r 'select(.state != "succeeded") | "\(.id) \(.state)"' status.jsonl | head -n 1)
[ -z "$bad" ] || fail "task ended $bad"
artq --dir "$q" log >log.jsonl
# Count, per task and attempt: real runs (marker lines), started, requeued,
# and starts that came after the attempt's trace.
violation=$(jq -r 'select(.type == "started" or .type == "requeued" or .type == "trace") | "\(.type) \(.task) \(.attempt)"' log.jsonl |
	awk -v runs="$ws/runs" '
		BEGIN { while ((getline line < runs) > 0) { split(line, f, " "); ran[f[1] " " f[2]]++ } }
		{ k = $2 " " $3 }
		$1 == "started"  { if (traced[k]) { print "attempt " k " started after its trace"; exit } started[k]++ }
		$1 == "requeued" { requeued[k]++ }
		$1 == "trace"    { traced[k] = 1 }
		END {
			for (k in ran) if (ran[k] > started[k]) { print "attempt " k " ran " ran[k] " times, started " started[k]; exit }
			for (k in started) if (started[k] > requeued[k] + 1) { print "attempt " k " started " started[k] " times, requeued " requeued[k]; exit }
		}')
[ -z "$violation" ] || fail "$violation"
# Two copies of one attempt running at once.
double_start=0
[ -f "$ws/doubles" ] && double_start=$(wc -l <"$ws/doubles")
[ "$double_start" -eq 0 ] || fail "double_start=$double_start: attempt(s) $(tr '\n' ',' <"$ws/doubles") ran twice at once"
# Fencing: every event about a running attempt names the current claim (the
# seq of the task's latest started event); a late one would be a zombie's.
late=$(jq -r 'select(.task != null) | "\(.seq) \(.type) \(.task) \(.claim // 0)"' log.jsonl |
	awk '
		$2 == "started" { cur[$3] = $1; next }
		$2 == "trace" || $2 == "succeeded" || $2 == "failed" || $2 == "cancel_requested" || $2 == "requeued" || ($2 == "cancelled" && $4 != 0) {
			if ($4 != cur[$3]) { print "event " $1 " (" $2 " of " $3 ") names claim " $4 ", current " cur[$3]; exit }
		}
		$2 == "succeeded" || $2 == "failed" || $2 == "requeued" || $2 == "cancelled" { cur[$3] = 0 }')
[ -z "$late" ] || fail "late event: $late"

# Batches: a 50,000-task `enqueue --batch` killed at random byte offsets of
# its write (the torn-write failpoint) and at random moments (SIGKILL)
# leaves no partial batch: readers see all of it or none, fsck passes, the
# next writer cuts a torn batch whole; re-running it under an
# --idempotency-key enqueues it exactly once.
i=batch
bkills="${ART_BATCH_KILLS:-$(( n / 10 > 8 ? n / 10 : 8 ))}"
btasks="${ART_BATCH_TASKS:-50000}"
awk -v n="$btasks" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"Task\",\"program\":\"true\",\"args\":[\"%d\"]}\n", i }' >batch.jsonl
# The size of the batch's write, measured as the kills below make it (after
# one task, under a key). Record times drop trailing zeros, so a later
# write can be a few bytes per record shorter: an offset past the end of
# that write is not a kill, and is counted apart.
artq --dir "$work/bsize" enqueue --id before -- true >/dev/null || fail "enqueue before the batch"
b0=$(stat -c %s "$work/bsize/events.log")
artq --dir "$work/bsize" enqueue --batch --idempotency-key b0 <batch.jsonl >/dev/null || fail "batch without kill"
bsize=$(( $(stat -c %s "$work/bsize/events.log") - b0 ))
partial=0 offsets="" beyond=0
for ((k = 1; k <= bkills; k++)); do
	bq="$work/b$k"
	artq --dir "$bq" enqueue --id before -- true >/dev/null || fail "enqueue before the batch"
	if ((k % 2)); then
		off=$(( (RANDOM * 32768 + RANDOM) % (bsize - 1) + 1 ))
		offsets="$offsets $off"
		b0=$(stat -c %s "$bq/events.log")
		if ARTQ_FAILPOINT="torn-write:$off" artq --dir "$bq" enqueue --batch --idempotency-key "b$k" <batch.jsonl >/dev/null; then
			wrote=$(( $(stat -c %s "$bq/events.log") - b0 ))
			[ "$off" -ge "$wrote" ] || fail "batch $k was not killed at byte $off of its $wrote-byte write"
			beyond=$((beyond + 1))
		fi
	else
		artq --dir "$bq" enqueue --batch --idempotency-key "b$k" <batch.jsonl >/dev/null &
		bp=$!
		sleep "0.$(printf '%03d' $((RANDOM % 400)))"
		kill -9 "$bp" 2>/dev/null || true
		{ wait "$bp"; } 2>/dev/null || true
	fi
	artq --dir "$bq" fsck >fsck.json || fail "fsck after batch kill $k: $(cat fsck.json)"
	total=$(artq --dir "$bq" status --summary | jq .total)
	if [ "$total" != 1 ] && [ "$total" != $((btasks + 1)) ]; then
		partial=$((partial + 1))
		fail "batch kill $k: $total tasks visible; want 1 or $((btasks + 1))"
	fi
	artq --dir "$bq" enqueue --id after -- true >/dev/null || fail "enqueue after the batch kill"
	artq --dir "$bq" enqueue --batch --idempotency-key "b$k" <batch.jsonl >/dev/null || fail "re-run of batch $k"
	artq --dir "$bq" enqueue --batch --idempotency-key "b$k" <batch.jsonl >/dev/null || fail "second re-run of batch $k"
	total=$(artq --dir "$bq" status --summary | jq .total)
	[ "$total" = $((btasks + 2)) ] || fail "batch $k after re-runs: $total tasks; want $((btasks + 2))"
	rm -rf "$bq"
done

# The zombie re-claim scenario on NATS (worker processes, SIGSTOP past the
# lease, SIGCONT with the task queued again and a free slot), as a Go test
# against an embedded nats-server.
zombie="${ART_ZOMBIE_TRIALS:-50}"
i=zombie
zres="skipped (no go toolchain)"
if command -v go >/dev/null && [ "$zombie" -gt 0 ]; then
	(cd "$root" && ART_ZOMBIE_TRIALS="$zombie" go test -count=1 -run '^TestZombieReclaim$' -v ./lib/queue/nats/) >zombie.txt 2>&1 ||
		fail "zombie scenario: $(grep -E 'late events|FAIL|want' zombie.txt | head -n 5)"
	zres=$(grep -o 'zombie scenario: .*' zombie.txt)
fi

tasks=$(wc -l <status.jsonl)
runs=$(wc -l <"$ws/runs")
echo "crash-queue: $n iterations, $kills kills ($failpoints at failpoints), $tasks tasks ($(wc -l <acked.txt) acknowledged), $runs runs"
echo "crash-queue: held after every kill: the log replays and fsck passes; no acknowledged task lost; attempts <= max_attempts"
echo "crash-queue: held at the end: every task succeeded; every run was claimed; an attempt ran again only after a requeue; no traced attempt ran twice; every trace and terminal event named the current claim; double_start=$double_start (no attempt ran twice at once)"
echo "crash-queue: batch: $bkills kills of a $btasks-task enqueue --batch ($bsize bytes; failpoint offsets:$offsets, $beyond of them past the end of that run's write; the rest SIGKILL at random moments): $partial partial batches; re-runs under --idempotency-key enqueued each batch exactly once"
echo "crash-queue: $zres"
