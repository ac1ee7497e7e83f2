#!/usr/bin/env bash
# bench-status.sh: whole-process time of `artq status` reads over a large
# file queue, from the state index and by replaying the log (the same
# commands with the index removed), interleaved round by round; prints the
# median of each. Usage: scripts/bench-status.sh [TASKS] [ROUNDS]
set -euo pipefail
tasks=${1:-200000}
rounds=${2:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/artq" ./cmd/artq)
artq="$work/artq"
# Two queues of TASKS tasks: "log" indexed by the batch enqueue, its
# replay reading the whole log; "snapshot" compacted, its replay reading
# the snapshot. Both then get a tail after the index (cancels, an enqueue).
awk -v n="$tasks" 'BEGIN { for (i = 0; i < n; i++) printf "{\"apiVersion\":\"art/v1alpha1\",\"kind\":\"Task\",\"id\":\"t%07d\",\"program\":\"true\",\"args\":[\"%d\"]}\n", i, i }' >"$work/batch.jsonl"
for name in log snapshot; do
	d="$work/$name"
	"$artq" --dir "$d" enqueue --batch -o text <"$work/batch.jsonl" >/dev/null
	if [ "$name" = snapshot ]; then "$artq" --dir "$d" compact 2>/dev/null; fi
	for i in 1 2 3; do "$artq" --dir "$d" cancel "t$(printf %07d $((i * 7)))" >/dev/null; done
	"$artq" --dir "$d" enqueue --id late -- true >/dev/null
	cp "$d/state.index" "$work/$name.index"
done
id="t$(printf %07d $((tasks / 2)))"

ms() { # ms CMD: "wall cpu" milliseconds of one run (cpu: user+sys of the
	# whole pipeline; on a loaded machine wall time is mostly waiting)
	local TIMEFORMAT='%R %U %S' t
	t=$({ time "$@" >/dev/null 2>&1; } 2>&1 | tail -n 1)
	awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%d:%d", a[1] * 1000, (a[2] + a[3]) * 1000 }'
}
summary() { "$artq" --dir "$q" status --summary; }
one() { "$artq" --dir "$q" status --no-history "$id"; }
head10() { "$artq" --dir "$q" status --state queued | head -n 10; }
declare -A runs
for ((r = 0; r < rounds; r++)); do
	for name in log snapshot; do
		q="$work/$name"
		for mode in index replay; do
			if [ "$mode" = index ]; then cp "$work/$name.index" "$q/state.index"; else rm -f "$q/state.index"; fi
			for c in summary one head10; do
				runs[$name.$mode.$c]+="$(ms $c) "
			done
		done
	done
done
median() { # median FIELD < "wall:cpu wall:cpu ..."
	tr ' ' '\n' | grep . | cut -d: -f"$1" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
printf '| %s | %s | %s | %s | %s | %s |\n' "command ($tasks tasks, median of $rounds)" "index wall ms" "replay wall ms" "index CPU ms" "replay CPU ms" "CPU ratio"
printf '|---|---|---|---|---|---|\n'
for name in log snapshot; do
	for c in summary one head10; do
		iw=$(echo "${runs[$name.index.$c]}" | median 1)
		pw=$(echo "${runs[$name.replay.$c]}" | median 1)
		ic=$(echo "${runs[$name.index.$c]}" | median 2)
		pc=$(echo "${runs[$name.replay.$c]}" | median 2)
		label=$c
		case $c in summary) label="status --summary" ;; one) label="status ID --no-history" ;; head10) label="status --state queued \\| head" ;; esac
		printf '| %s (%s) | %s | %s | %s | %s | %s |\n' "$label" "$name" "$iw" "$pw" "$ic" "$pc" "$(awk -v a="$pc" -v b="$ic" 'BEGIN { if (b > 0) printf "%.0fx", a / b; else printf ">%.0fx", a }')"
	done
done
