#!/usr/bin/env bash
# bench-worker.sh [ROUNDS] [BINDIR ...] — the file-backend worker's own CPU
# per task, apart from its tasks'.
#
# Each round, for concurrency 1, 2 and 8, and for each BINDIR in turn
# (interleaved, so that every build sees the same load), it enqueues TASKS
# (default 1,000) tasks that run `true` into a fresh queue with one
# `enqueue --batch`, drains them with one `artq work --drain -q -j C --allow
# true`, and measures that process with `benchq self`: its own CPU (all its
# threads; what it waited for apart) and the whole tree's (its own plus its
# per-task processes and `true`). A BINDIR holds artq and artexec-shim
# (default: bin/, from make build); give two to compare builds, the first is
# the baseline of the ratios.
#
# Prints one line per drain, then per concurrency and build the medians
# over the rounds: tasks/s, worker CPU ms per task, whole-tree CPU ms per
# task, and the median of the per-round ratios against the first build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rounds="${1:-3}"
shift || true
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: bench-worker.sh [ROUNDS] [BINDIR ...]" >&2; exit 2; }
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("$root/bin")
for b in "${bins[@]}"; do
	[ -x "$b/artq" ] || { echo "bench-worker: $b/artq missing (make build, or give a directory holding artq and artexec-shim)" >&2; exit 2; }
done
tasks="${TASKS:-1000}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

work=$(mktemp -d /tmp/bench-worker.XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd scripts/benchq && go build -o "$work/benchq" .)
for ((i = 0; i < tasks; i++)); do
	echo '{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}'
done >"$work/tasks.jsonl"
mkdir -p "$work/ws"

results="$work/results"
: >"$results"
for ((r = 1; r <= rounds; r++)); do
	for c in 1 2 8; do
		for ((k = 0; k < ${#bins[@]}; k++)); do
			b=${bins[$k]}
			q="$work/q"
			rm -rf "$q"
			"$b/artq" enqueue --dir "$q" --batch <"$work/tasks.jsonl" >/dev/null
			read -r wall self kids < <(cd "$work/ws" && "$work/benchq" self -- "$b/artq" work --dir "$q" --drain -q -j "$c" --allow true --workspace "$work/ws")
			line=$(awk -v n="$tasks" -v w="$wall" -v s="$self" -v k="$kids" 'BEGIN { printf "%.0f %.3f %.3f", n / w, s * 1000 / n, (s + k) * 1000 / n }')
			echo "round $r c$c build $k: $line  (tasks/s, worker ms/task, tree ms/task)"
			echo "$r $c $k $line" >>"$results"
		done
	done
done

echo
echo "| concurrency | build | tasks/s | worker CPU ms/task | whole tree ms/task | worker / baseline | tree / baseline |"
echo "|---|---|---|---|---|---|---|"
awk '
	{ key = $2 " " $3; tps[key] = tps[key] " " $4; self[key] = self[key] " " $5; tree[key] = tree[key] " " $6
	  v[$1 " " $2 " " $3 " s"] = $5; v[$1 " " $2 " " $3 " t"] = $6; R[$1] = 1; C[$2] = 1; K[$3] = 1 }
	function median(s,    a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		for (c = 1; c <= 8; c++) {
			if (!(c in C)) continue
			for (k = 0; (k "") in K; k++) {
				rs = ""; rt = ""
				for (r in R) { rs = rs " " v[r " " c " " k " s"] / v[r " " c " 0 s"]; rt = rt " " v[r " " c " " k " t"] / v[r " " c " 0 t"] }
				printf "| %d | %d | %.0f | %.3f | %.3f | %.2f | %.2f |\n", c, k, median(tps[c " " k]), median(self[c " " k]), median(tree[c " " k]), median(rs), median(rt)
			}
		}
	}' "$results"
