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
#   - each run the tasks recorded (a marker line "ID ATTEMPT") was claimed by
#     a started event, an attempt is started again only after a requeue, and
#     no attempt with a trace is ever started again.
# Uses the artq on PATH (make build; PATH=bin:$PATH) and jq. Prints what held
# and exits 1 on the first violated invariant.
set -euo pipefail

n="${1:-${ART_CRASH_ITERS:-200}}"
command -v artq >/dev/null || { echo "crash-queue: artq not on PATH (run make build)" >&2; exit 2; }
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
		artq --dir "$q" enqueue --id "$id" --max-attempts 3 -- sh -c \
			"echo \"\$ARTQ_TASK_ID \$ARTQ_ATTEMPT\" >> runs; sleep 0.0$((RANDOM % 6)); [ \"\$ARTQ_ATTEMPT\" -ge $need ]" \
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

tasks=$(wc -l <status.jsonl)
runs=$(wc -l <"$ws/runs")
echo "crash-queue: $n iterations, $kills kills ($failpoints at failpoints), $tasks tasks ($(wc -l <acked.txt) acknowledged), $runs runs"
echo "crash-queue: held after every kill: the log replays and fsck passes; no acknowledged task lost; attempts <= max_attempts"
echo "crash-queue: held at the end: every task succeeded; every run was claimed; an attempt ran again only after a requeue; no traced attempt ran twice"
