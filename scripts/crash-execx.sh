#!/usr/bin/env bash
# crash-execx.sh — artexec's race attacks at their full counts.
#
# make test runs each race attack of lib/execx a few times (enough to
# catch a regression that lets it through most of the time, within the
# test budget); this runs them as often as their claims are stated for
# (EXECX_SOAK=1): the survivor race (a task that sets its supervisor to
# SCHED_IDLE and forks and exits in a loop to outrun the cleanup) 20 times
# in each of none, landlock and strict, as root and as nobody, and the
# workspace swap race 25 times under landlock and strict; and artq's
# timed-kill race (ARTQ_SOAK=1): 100 workers SIGKILLed at random moments
# around a claim, none of whose tasks may start after the reap. About 6 minutes
# on two cores. Needs the Go toolchain (it runs go test) and, for the
# nobody runs, root. Exits 1 if any attack got through.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
command -v go >/dev/null || { echo "crash-execx: needs go" >&2; exit 2; }
EXECX_SOAK=1 GORACE="${GORACE:-} atexit_sleep_ms=0" go test -race -count=1 -timeout 30m -v \
	-run '^(TestSurvivorCannotOutrunCleanup|TestWorkspaceSwapRace)$' ./lib/execx/ |
	grep -E '^(=== RUN|--- |\s+\S+_test\.go:[0-9]+: .*(escapes|tries)|PASS|FAIL|ok )' || true
# grep only filters what is shown; the verdict is go test's own.
execx=("${PIPESTATUS[@]}")
ARTQ_SOAK=1 go test -count=1 -timeout 30m -v -run '^TestNoStartAfterWorkerKilled$' ./cmd/artq/ |
	grep -E '^(--- |\s+\S+_test\.go:[0-9]+: |PASS|FAIL|ok )' || true
artq=("${PIPESTATUS[@]}")
[ "${execx[0]}" -eq 0 ] && [ "${artq[0]}" -eq 0 ]
