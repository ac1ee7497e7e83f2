#!/usr/bin/env bash
# crash.sh [N] — the kill -9 soaks of art's durable state, as one run.
#
# Runs, one after the other, N iterations (default $ART_CRASH_ITERS, else
# 200) of:
#   scripts/crash-queue.sh  artq: enqueuers and a worker (sometimes stopped
#                           at a failpoint) SIGKILLed at random moments;
#   scripts/crash-goal.sh   artgoal: two writers racing on one revision,
#                           SIGKILLed at random moments;
#   scripts/crash-execx.sh  artexec's race attacks (survivor, workspace
#                           swap) at their full counts (N does not apply).
# Each checks its invariants after every kill and at the end, and prints
# what held. This prints a summary line per soak and exits 1 if any found
# a violated invariant (the other still runs, so one report shows both), 2
# on bad usage or a missing tool.
#
# Uses the artq and artgoal on PATH, else the ones in the repository's bin/
# (make build), and jq; the artq must be built with -tags failpoint (make
# crash builds bin/failpoint/artq and puts it first on PATH). On two cores 200 iterations take 2–3 minutes,
# almost all of it the queue soak.
set -euo pipefail

n="${1:-${ART_CRASH_ITERS:-200}}"
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "usage: crash.sh [ITERATIONS]  (a positive integer, got '$n')" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v artq >/dev/null || ! command -v artgoal >/dev/null; then
	if [ -x "$here/../bin/artq" ] && [ -x "$here/../bin/artgoal" ]; then
		PATH="$(cd "$here/../bin" && pwd):$PATH"
		[ -x "$here/../bin/failpoint/artq" ] && PATH="$(cd "$here/../bin/failpoint" && pwd):$PATH"
	else
		echo "crash: artq and artgoal are neither on PATH nor in bin/ (run make build)" >&2
		exit 2
	fi
fi
command -v jq >/dev/null || { echo "crash: needs jq" >&2; exit 2; }
echo "crash: $n iterations of each soak; artq $(command -v artq), artgoal $(command -v artgoal)"

failed=()
summary=()
for soak in queue goal execx; do
	echo
	echo "crash: --- $soak ---"
	start=$(date +%s.%N)
	status=0
	bash "$here/crash-$soak.sh" "$n" || status=$?
	took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	if [ "$status" -eq 0 ]; then
		summary+=("crash: $soak: every invariant held ($n iterations, ${took}s)")
	else
		summary+=("crash: $soak: FAILED (exit $status after ${took}s; see its output above)")
		failed+=("$soak")
	fi
done

echo
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
	echo "crash: FAILED: ${failed[*]}"
	exit 1
fi
echo "crash: all invariants held in every soak"
