#!/usr/bin/env bash
# The art demo: every tool at work on the embedded defaults, in a temporary
# directory, with nothing but Go installed. `make demo` builds bin/ and runs
# this with bin/ first on PATH. It leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

for tool in artexec artq artagent artobs artgoal artrelease; do
	command -v "$tool" >/dev/null || { echo "demo: $tool not on PATH (run 'make demo')" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/art-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
export ART_HOME="$work/home"
# Go's caches for the agent's verify command (go test) live in the demo dir.
export GOCACHE="${GOCACHE:-$(go env GOCACHE)}" GOPATH="${GOPATH:-$(go env GOPATH)}" GOFLAGS=-buildvcs=false
mkdir -p "$work/ws"

step() { printf '\n== %s\n' "$*"; }
# show runs a command, printing it first; a non-zero exit is shown, not fatal.
show() {
	local arg line='$'
	for arg in "$@"; do
		case $arg in
		*[!A-Za-z0-9_./:=@%+,-]* | '') line+=" '${arg//\'/\'\\\'\'}'" ;;
		*) line+=" $arg" ;;
		esac
	done
	printf '%s\n' "$line"
	local rc=0
	"$@" || rc=$?
	[ "$rc" -eq 0 ] || printf '(exit %d)\n' "$rc"
}

step "artexec: a bounded runner; the Result is JSON, -o text is the human view"
show artexec run --workspace "$work/ws" --allow echo -o text -- echo hello from a bounded child
show artexec run --workspace "$work/ws" --allow sleep --timeout 1s -o text -- sleep 10
show artexec run --workspace "$work/ws" --allow echo -o text -- rm -rf /
show artexec run --workspace "$work/ws" --allow pwd --cwd ../.. -o text -- pwd
show artexec run --workspace "$work/ws" --allow sh --output-bytes 64 --result "$work/result.json" -o text -- sh -c 'seq 1 100000 | tail -n 3'

step "artq: a crash-safe queue; one task fails then succeeds on retry, one is cancelled"
flaky='test -e flaky.ok || { touch flaky.ok; echo first try fails >&2; exit 3; }'
show artq enqueue --id hello -- echo hello
show artq enqueue --id flaky --max-attempts 2 -- sh -c "$flaky"
show artq enqueue --id nap -- sleep 60
show artq cancel nap
show artq work --drain --allow echo --allow sh --allow sleep --workspace "$work/ws"
show artq status -o text
show artq retry flaky
show artq work --drain --allow echo --allow sh --workspace "$work/ws"
show artq status -o text

step "artagent: a scripted model fixes a Go project; finish is refused until verify passes"
cp -r testdata/agent/goproject "$work/calc"
show artagent run -o text --workspace "$work/calc" --task 'make go test ./... pass' \
	--provider mock --mock-script testdata/agent/goproject-fix.jsonl \
	--allow go --verify 'go test ./...' --env GOCACHE --env GOPATH --env GOFLAGS \
	--transcript "$work/agent.jsonl"
grep -n 'return a + b' "$work/calc/calc.go"

step "artobs: the queue's log and an agent run, redacted into one verified JSONL sink"
events="$work/events.jsonl"
artq log | artobs emit --wrap queue --sink "jsonl:$events"
cp -r testdata/agent/goproject "$work/calc2"
GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345 \
	artagent run --workspace "$work/calc2" --task 'make go test ./... pass' \
	--provider mock --mock-script testdata/agent/goproject-fix.jsonl \
	--allow go --verify 'go test ./...' --env GOCACHE --env GOPATH --env GOFLAGS |
	artobs emit --wrap agent --subject agent/fix-calc --sink "jsonl:$events"
printf '%s\n' '{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"deploy/1","type":"note","attrs":{"log":"pushed with GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345"}}' |
	artobs emit --sink "jsonl:$events" --sink stdout
show artobs verify "$events" -o text
show artobs tail "$events" -n 3 -o text
if grep -q ghp_0123456789 "$events"; then echo "demo: a secret reached the sink" >&2; exit 1; fi
echo "no secret in $events"

step "the pipeline: an agent run as a queue task, in its own copy, accepted by the worker's own go test"
mkdir -p "$work/pws" && cp -R testdata/agent/goproject "$work/pws/calc"
cat >"$work/agent-policy.json" <<JSON
{"apiVersion": "art/v1alpha1", "kind": "Policy", "allow": ["artagent", "go"],
 "workspace": "$work/pws", "env_allow": ["PATH", "HOME", "GOCACHE", "GOPATH", "GOFLAGS"]}
JSON
artq --queue agents enqueue --id fix-add --workspace-mode copy --workspace-source calc \
	--acceptance 'go test ./...' --events "jsonl:$events" -- \
	artagent run --workspace . --task 'make go test ./... pass' \
	--provider mock --mock-script "$repo/testdata/agent/goproject-fix.jsonl" \
	--allow go --verify 'go test ./...' --env GOCACHE --env GOPATH --env GOFLAGS --events "jsonl:$events" >/dev/null
show artq --queue agents work --drain --policy "$work/agent-policy.json" --events "jsonl:$events" --keep-workspaces always
show artq --queue agents status -o text
grep -H 'return a +' "$ART_HOME/queues/agents/work/fix-add-1/calc.go"
show artobs tail "$events" --subject queue/agents/task/fix-add -n 4 -o text

step "artgoal: a goal walked through its eight phases with evidence from the queue, then closed"
printf 'calc: Add adds\n' >"$work/design.md"
show artgoal new calc --title 'Fix calc.Add' --non-goal 'no new API' \
	--check 'go test passes' --check 'design written' -o text
artgoal check calc --rev 1 --item c1 --evidence "file:$work/design.md" >/dev/null
# task evidence is read from the queue: a finished task, in the state the queue holds
artgoal check calc --rev 2 --item c0 --evidence task:hello >/dev/null
artgoal show calc -o text | grep -A2 ' c0: '
show artgoal check calc --rev 3 --item c0 --evidence task:flaky=failed # refused: it succeeded on retry
# event evidence is found, and its id recomputed, in the events file; the goal's own events go there too
hello_done=$(artobs tail "$events" --subject queue/default/task/hello -n 1 | sed 's/.*"id":"\(sha256:[0-9a-f]\{64\}\)".*/\1/')
artgoal --events "jsonl:$events" check calc --rev 3 --item c0 --evidence "event:$hello_done" >/dev/null
rev=4
for phase in frame explore design plan build verify review deliver; do
	artgoal --events "jsonl:$events" receipt calc --rev "$rev" --summary "$phase done" --evidence "note:$phase notes" >/dev/null
	rev=$((rev + 1))
done
show artgoal receipt calc --rev 5 --summary 'rewrite history' --evidence note:x
cat >"$work/closure.json" <<'JSON'
{"apiVersion": "art/v1alpha1", "kind": "GoalClosure", "outcome": "calc.Add fixed and verified",
 "cleanup": ["removed the demo workspace"], "debt": [], "risks": [], "next": []}
JSON
show artgoal --events "jsonl:$events" close calc --rev 12 --closure "$work/closure.json" -o text
show artgoal list -o text
show artobs verify "$events" -o text

step "artrelease: a byte-reproducible release of a throwaway repository"
rel="$work/release-repo"
git init -q -b main "$rel"
printf '{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"demo","license":"MIT"}\n' >"$rel/release.json"
echo hello >"$rel/README.md"
git -C "$rel" add -A
git -C "$rel" -c user.name=demo -c user.email=demo@example.com -c commit.gpgsign=false commit -q -m 'feat: first release'
git -C "$rel" -c user.name=demo -c user.email=demo@example.com -c tag.gpgsign=false tag -a -m v1.0.0 v1.0.0
echo 'not committed' >>"$rel/README.md" # never reaches the archive
show artrelease build --repo "$rel" --ref v1.0.0 --out "$work/dist" -o text
show artrelease verify "$work/dist" --repo "$rel" -o text
(cd "$work/dist" && sha256sum -c SHA256SUMS)
printf 'README.md in the archive: '
tar -xzOf "$work/dist/demo-1.0.0.tar.gz" demo-1.0.0/README.md

step "done: every tool ran; state was in $work (now removed)"
