#!/usr/bin/env bash
# Whole-process benchmark of `artrelease build` (archive + SBOM + notes +
# manifest + SHA256SUMS) against `git archive --format=tar.gz` of the same
# commit, on this repository and on a bigger public Go module source tree
# (nats-server, unpacked from the module cache into a fresh Git repository).
# Runs are interleaved; the report is the ratio of the medians measured in
# this run (docs/performance.md). Target: <= 1.5.
#
#   scripts/bench-release.sh [RUNS] [GITDIR]
#   scripts/bench-release.sh binaries [RUNS]
#
# The binaries mode times a release of this repository's seven programs
# (cmd/*) for the four platforms its release.json names (darwin/amd64,
# darwin/arm64, linux/amd64, linux/arm64: the tools are Unix-only) — source archive, SBOMs, notes, the builds from the
# extracted archive, the per-platform archives and per-binary SBOMs —
# against plain `go build -trimpath` of the same set in the worktree (one go
# build per platform), both with the same warm build cache, interleaved,
# medians, and the peak RSS of the largest process of each (GNU time %M).
# Target: <= 1.2x.
#
# RUNS defaults to 9; artrelease comes from PATH, else is built. GITDIR, when
# given, is a real repository (a bare snapshot works: full history and tags,
# no release.json needed) whose HEAD is benchmarked as the bigger tree, with
# a generated --contract, instead of the module-cache import.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=source
if [ "${1:-}" = binaries ]; then
	mode=binaries
	shift
fi
runs="${1:-9}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v artrelease >/dev/null; then
	go build -o "$work/bin/artrelease" ./cmd/artrelease
	PATH="$work/bin:$PATH"
fi

# A git that reads no user or system configuration: the baseline must not
# pick up a tar.tar.gz.command or a different compression level.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

if [ "$mode" = binaries ]; then
	runs="${1:-3}"
	# release.json declares the seven programs for the four platforms.
	cp release.json "$work/bins.json"
	commit=$(git rev-parse HEAD)
	# %.0f: nanoseconds of a minute overflow awk's %d.
	median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.0f", m}'; }
	gobuild() { # out
		local p
		for p in darwin/amd64 darwin/arm64 linux/amd64 linux/arm64; do
			GOOS=${p%/*} GOARCH=${p#*/} CGO_ENABLED=0 go build -trimpath -o "$1/${p/\//_}/" ./cmd/...
		done
	}
	timed() { # file cmd...: appends "ns rss_kib"
		local f=$1 t0 t1
		shift
		t0=$(date +%s%N)
		/usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
		t1=$(date +%s%N)
		echo "$((t1 - t0)) $(cat "$work/rss")" >>"$f"
	}
	export -f gobuild
	echo "bench-release binaries: $(go version | awk '{print $3}'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
	# Warm-up: both fill the shared build cache for the four platforms.
	bash -c "gobuild $work/gowarm"
	artrelease build --ref "$commit" --contract "$work/bins.json" --out "$work/warm" --force >/dev/null
	: >"$work/go.txt"
	: >"$work/art.txt"
	for i in $(seq "$runs"); do
		rm -rf "$work/goout" "$work/out"
		timed "$work/go.txt" bash -c "gobuild $work/goout"
		timed "$work/art.txt" artrelease build --ref "$commit" --contract "$work/bins.json" --out "$work/out"
		cmp -s "$work/out/SHA256SUMS" "$work/warm/SHA256SUMS" || { echo "bench: release builds differ" >&2; exit 1; }
	done
	g=$(awk '{print $1}' "$work/go.txt" | median)
	a=$(awk '{print $1}' "$work/art.txt" | median)
	grss=$(awk '{print $2}' "$work/go.txt" | sort -n | tail -1)
	arss=$(awk '{print $2}' "$work/art.txt" | sort -n | tail -1)
	nbin=$(find "$work/goout" -type f | wc -l)
	awk -v g="$g" -v a="$a" -v gr="$grss" -v ar="$arss" -v r="$runs" -v n="$nbin" 'BEGIN {
		printf "%d binaries: go build %.1f s (peak RSS %.0f MiB)   artrelease build %.1f s (peak RSS %.0f MiB)   ratio %.2fx   (median of %d)\n",
			n, g/1e9, gr/1024, a/1e9, ar/1024, a/g, r }'
	exit 0
fi

bigdir="${2:-}"
if [ -n "$bigdir" ]; then
	mod=$(git -C "$bigdir" cat-file -p HEAD:go.mod | awk '$1 == "module" {print $2; exit}')
	printf '{"apiVersion": "art/v1alpha1", "kind": "ReleaseContract", "name": "big", "module": "%s", "license": "LicenseRef-benchmark"}\n' "$mod" >"$work/big.json"
fi

# The bigger tree by default: nats-server v2.15.2 (this module's own
# dependency, so `go mod download` finds it in the cache or the module proxy).
nats_mod="github.com/nats-io/nats-server/v2@v2.15.2"
if [ -z "$bigdir" ]; then
zip=$(go mod download -json "$nats_mod" | sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$/\1/p')
big="$work/nats-server"
mkdir -p "$big"
unzip -q "$zip" -d "$work/unzip"
mv "$work/unzip/github.com/nats-io/nats-server/v2@v2.15.2/"* "$work/unzip/github.com/nats-io/nats-server/v2@v2.15.2/".[!.]* "$big/" 2>/dev/null || true
chmod -R u+w "$big"
cat >"$big/release.json" <<'EOF'
{"apiVersion": "art/v1alpha1", "kind": "ReleaseContract", "name": "nats-server",
 "module": "github.com/nats-io/nats-server/v2", "license": "Apache-2.0"}
EOF
git -C "$big" init -q -b main
git -C "$big" add -A
GIT_AUTHOR_DATE="@1767366245 +0000" GIT_COMMITTER_DATE="@1767366245 +0000" \
	git -C "$big" -c user.name=bench -c user.email=bench@example.com commit -q -m "import $nats_mod"
fi

now() { date +%s%N; }

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%d", m}'; }

bench() { # name repo [contract]
	local name=$1 repo=$2 commit files bytes t0 t1 i
	local contract=()
	[ -n "${3:-}" ] && contract=(--contract "$3")
	commit=$(git -C "$repo" rev-parse HEAD)
	files=$(git -C "$repo" ls-tree -r "$commit" | wc -l)
	bytes=$(git -C "$repo" archive --format=tar "$commit" | wc -c)
	: >"$work/git.ns"
	: >"$work/art.ns"
	# One warm-up of each, then interleaved runs.
	git -C "$repo" archive --format=tar.gz --prefix=x/ "$commit" >"$work/warm.tgz"
	artrelease build --ref "$commit" --repo "$repo" "${contract[@]}" --out "$work/warm" --force >/dev/null
	for i in $(seq "$runs"); do
		t0=$(now)
		git -C "$repo" archive --format=tar.gz --prefix=x/ "$commit" >"$work/out.tgz"
		t1=$(now)
		echo $((t1 - t0)) >>"$work/git.ns"
		rm -rf "$work/out"
		t0=$(now)
		artrelease build --ref "$commit" --repo "$repo" "${contract[@]}" --out "$work/out" >/dev/null
		t1=$(now)
		echo $((t1 - t0)) >>"$work/art.ns"
	done
	local g a
	g=$(median <"$work/git.ns")
	a=$(median <"$work/art.ns")
	awk -v n="$name" -v f="$files" -v b="$bytes" -v g="$g" -v a="$a" -v r="$runs" 'BEGIN {
		printf "%-14s %6d files %7.1f MiB tar   git archive %7.1f ms   artrelease build %7.1f ms   ratio %.2fx   (median of %d)\n",
			n, f, b/1048576, g/1e6, a/1e6, a/g, r }'
	cmp -s "$work/out/SHA256SUMS" "$work/warm/SHA256SUMS" || { echo "bench: $name: builds differ" >&2; exit 1; }
}

echo "bench-release: $(go version | awk '{print $3}'), $(git --version), $(nproc) cores"
# The source release only (release.json also declares the binaries, which
# the binaries mode measures).
printf '{"apiVersion": "art/v1alpha1", "kind": "ReleaseContract", "name": "art", "module": "github.com/art-runtime/art", "license": "Apache-2.0", "notes": {"changelog": "CHANGELOG.md"}}\n' >"$work/src.json"
bench "art (HEAD)" . "$work/src.json"
if [ -n "$bigdir" ]; then
	bench "$(basename "$(dirname "$bigdir")")" "$bigdir" "$work/big.json"
else
	bench "nats-server" "$big"
fi
