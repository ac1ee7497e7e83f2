#!/usr/bin/env bash
# Reproducibility of a release with binaries, as two differently set-up
# machines would build it: this repository's seven programs built twice by
# `artrelease build`, the second time from another clone path with another
# HOME, GOPATH, an empty GOCACHE (everything compiled again), TMPDIR, TZ,
# umask and locale, and a polluted GOFLAGS; the two release directories
# must be identical byte for byte, and verify (which rebuilds the binaries
# once more) must pass. Slow: the second build compiles the standard
# library and every package for each platform from nothing.
#
#   scripts/release-repro.sh [PLATFORM...]    (default: linux/amd64)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
platforms=("${@:-linux/amd64}")

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/bin/artrelease" ./cmd/artrelease
art="$work/bin/artrelease"

# release.json's binaries, for the platforms asked.
list=""
for p in "${platforms[@]}"; do list="$list${list:+, }\"$p\""; done
sed "s#\"platforms\": \[[^]]*\]#\"platforms\": [$list]#g" release.json >"$work/contract.json"
commit=$(git rev-parse HEAD)

echo "release-repro: $(go version | awk '{print $3}'), commit ${commit:0:12}, platforms ${platforms[*]}"
"$art" build --ref "$commit" --contract "$work/contract.json" --out "$work/one" --provenance >/dev/null

git clone -q --no-local . "$work/elsewhere/clone"
mkdir -p "$work/m2/home" "$work/m2/gopath" "$work/m2/cache" "$work/m2/tmp"
(
	umask 077
	cd "$work/elsewhere/clone"
	env HOME="$work/m2/home" GOPATH="$work/m2/gopath" GOCACHE="$work/m2/cache" \
		GOMODCACHE="$(go env GOMODCACHE)" TMPDIR="$work/m2/tmp" TZ=Pacific/Chatham \
		LC_ALL=fr_FR.UTF-8 LANG=fr_FR.UTF-8 GOFLAGS="-tags=leaked" CGO_ENABLED=1 \
		"$art" build --ref "$commit" --contract "$work/contract.json" --out "$work/two" --provenance >/dev/null
)
if diff -r "$work/one" "$work/two" >/dev/null; then
	echo "identical: $(ls "$work/one" | wc -l) files, $(grep -c '' "$work/one/SHA256SUMS") checksums"
else
	diff -r "$work/one" "$work/two" | head
	echo "release-repro: the two builds differ" >&2
	exit 1
fi
"$art" verify "$work/one" --contract "$work/contract.json" -o text | tail -1
(cd "$work/one" && sha256sum -c --quiet SHA256SUMS && sha256sum -c --quiet checksums.txt) && echo "sha256sum -c: both pass"
