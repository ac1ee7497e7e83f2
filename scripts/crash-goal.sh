#!/usr/bin/env bash
# crash-goal.sh [N] — crash soak for artgoal's journal writes.
#
# Runs N iterations (default 200). Each starts two artgoal writers racing on
# the same revision of one goal (a check and a receipt), SIGKILLs them at a
# random moment of their run, then checks the invariants:
#   - the journal is a complete, valid journal (artgoal validate);
#   - its revision is the old one (and then the bytes are the old bytes) or
#     exactly one more (never two: both writers named the same revision);
#   - a new revision is a successor the store accepts (nothing lost);
#   - the file stays 0600;
#   - temp files left by killed writers never break the next write, and the
#     next successful write of the goal removes them.
# Uses the artgoal on PATH (make build; PATH=bin:$PATH) and a scratch
# ART_HOME. Prints a summary and exits 1 on the first violated invariant.
set -euo pipefail

n="${1:-200}"
command -v artgoal >/dev/null || { echo "crash-goal: artgoal not on PATH (run make build)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export ART_HOME="$work/home"
cd "$work"
journal="$ART_HOME/goals/soak.json"

fail() { echo "crash-goal: INVARIANT VIOLATED at iteration $i: $*" >&2; exit 1; }
revision() { sed -n 's/^  "revision": \([0-9]*\),$/\1/p' "$1"; }
evidence_count() { grep -c '"recorded_at"' "$1" || true; }

artgoal new soak --title 'crash soak' --check 'survives kill -9' >/dev/null
seals=0 committed=0 unchanged=0
: >temps.txt

for ((i = 1; i <= n; i++)); do
	cp "$journal" before.json
	rev=$(revision before.json)
	ev_before=$(evidence_count before.json)

	artgoal check soak --rev "$rev" --item 0 --evidence "note:iteration $i" >/dev/null 2>&1 &
	a=$!
	if ((seals < 8)); then
		artgoal receipt soak --rev "$rev" --summary "phase $seals at iteration $i" --evidence "note:$i" >/dev/null 2>&1 &
	else
		artgoal check soak --rev "$rev" --item c0 --evidence "note:second writer $i" >/dev/null 2>&1 &
	fi
	b=$!
	# a random moment within a writer's lifetime (a few milliseconds)
	sleep "0.00$((RANDOM % 10))$((RANDOM % 10))"
	kill -9 "$a" "$b" 2>/dev/null || true
	wait "$a" "$b" 2>/dev/null || true

	artgoal validate "$journal" >/dev/null 2>validate.err || fail "journal does not validate: $(cat validate.err)"
	[ "$(stat -c %a "$journal")" = 600 ] || fail "journal mode is $(stat -c %a "$journal")"
	now=$(revision "$journal")
	if [ "$now" = "$rev" ]; then
		cmp -s "$journal" before.json || fail "same revision $rev but different bytes"
		unchanged=$((unchanged + 1))
	elif [ "$now" = $((rev + 1)) ]; then
		committed=$((committed + 1))
		ev_now=$(evidence_count "$journal")
		((ev_now > ev_before)) || fail "revision advanced without new evidence"
		# the receipt writer won if the phase count of receipts grew
		if grep -q "\"summary\": \"phase $seals at iteration $i\"" "$journal"; then
			seals=$((seals + 1))
		fi
		# a put of the same journal must be accepted: it is a legitimate successor of itself
		artgoal put soak --rev "$now" --file "$journal" >after-put.json 2>put.err || fail "stored journal refused by put: $(cat put.err)"
		cp after-put.json "$work/last.json"
	else
		fail "revision went from $rev to $now"
	fi
	find "$ART_HOME/goals" -name 'soak.json[0-9]*' >>temps.txt
done

# a final write succeeds and clears every leftover temp file
rev=$(revision "$journal")
artgoal check soak --rev "$rev" --item 0 --evidence 'note:after the soak' >/dev/null
left=$(find "$ART_HOME/goals" -name 'soak.json[0-9]*' | wc -l)
[ "$left" = 0 ] || { i=end; fail "$left temp files left after a successful write"; }

temps_seen=$(sort -u temps.txt | wc -l)
echo "crash-goal: $n iterations, 2 writers each killed with SIGKILL at a random moment"
echo "crash-goal: $committed commits, $unchanged untouched, $seals phases sealed, $temps_seen temp files left by killed writers (none broke a later write; all cleared)"
echo "crash-goal: invariants held: journal always valid and 0600; old bytes or exactly one new revision; never torn; every commit a legitimate successor"
