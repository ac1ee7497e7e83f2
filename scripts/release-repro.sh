#!/usr/bin/env bash
# Reproducibility of a release with binaries, as two differently set-up
# machines would build it: `artrelease build` twice, the second time from
# another clone path with another HOME, GOPATH, an empty GOCACHE
# (everything compiled again), TMPDIR, TZ, umask and locale, and a polluted
# GOFLAGS and CGO_ENABLED; the two release directories must be identical
# byte for byte, verify (which rebuilds the binaries once more) must pass,
# and sha256sum -c must pass on both checksum files. Slow: the second build
# compiles the standard library and every package from nothing.
#
#   scripts/release-repro.sh [PLATFORM...]
#       this repository's seven programs (default platform: linux/amd64)
#   scripts/release-repro.sh --module PATH@VERSION [N]
#       a real module with several mains, from the module cache (default
#       golang.org/x/tools@v0.51.0): imported into a fresh Git repository,
#       its contract written by `artrelease init`, the first N (default 6)
#       cmd/* programs for linux/amd64
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/bin/artrelease" ./cmd/artrelease
art="$work/bin/artrelease"

twice() { # repo contract
	local repo=$1 contract=$2 commit
	commit=$(git -C "$repo" rev-parse HEAD)
	echo "release-repro: $(go version | awk '{print $3}'), $(basename "$repo") commit ${commit:0:12}"
	"$art" build --repo "$repo" --ref "$commit" --contract "$contract" --out "$work/one" --provenance >/dev/null
	git clone -q --no-local "$repo" "$work/elsewhere/clone"
	mkdir -p "$work/m2/home" "$work/m2/gopath" "$work/m2/cache" "$work/m2/tmp"
	(
		umask 077
		cd "$work/elsewhere/clone"
		env HOME="$work/m2/home" GOPATH="$work/m2/gopath" GOCACHE="$work/m2/cache" \
			GOMODCACHE="$(go env GOMODCACHE)" TMPDIR="$work/m2/tmp" TZ=Pacific/Chatham \
			LC_ALL=fr_FR.UTF-8 LANG=fr_FR.UTF-8 GOFLAGS="-tags=leaked" CGO_ENABLED=1 \
			"$art" build --ref "$commit" --contract "$contract" --out "$work/two" --provenance >/dev/null
	)
	if diff -r "$work/one" "$work/two" >/dev/null; then
		echo "identical: $(ls "$work/one" | wc -l) files, $(find "$work/one" -name '*.spdx.json' | wc -l) SBOMs"
	else
		diff -r "$work/one" "$work/two" | head
		echo "release-repro: the two builds differ" >&2
		exit 1
	fi
	"$art" verify "$work/one" --contract "$contract" -o text | tail -1
	(cd "$work/one" && sha256sum -c --quiet SHA256SUMS && sha256sum -c --quiet checksums.txt) && echo "sha256sum -c: both pass"
}

if [ "${1:-}" = --module ]; then
	mod="${2:-golang.org/x/tools@v0.51.0}"
	n="${3:-6}"
	zip=$(go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$/\1/p')
	repo="$work/$(basename "${mod%@*}")"
	mkdir -p "$work/unzip" "$repo"
	unzip -q "$zip" -d "$work/unzip"
	cp -r "$work/unzip/${mod%@*}@${mod#*@}/." "$repo/"
	chmod -R u+w "$repo"
	git -C "$repo" init -q -b main
	git -C "$repo" add -A
	GIT_AUTHOR_DATE="@1767366245 +0000" GIT_COMMITTER_DATE="@1767366245 +0000" \
		git -C "$repo" -c user.name=repro -c user.email=repro@example.com commit -q -m "import $mod"
	"$art" init --repo "$repo" --out "$work/init.json"
	jq --argjson n "$n" '.binaries |= (.[:$n] | map(.platforms = ["linux/amd64"]))' "$work/init.json" >"$work/contract.json"
	echo "contract by artrelease init: $(jq -r '[.binaries[].name] | join(" ")' "$work/contract.json"), licence $(jq -r .license "$work/contract.json")"
	twice "$repo" "$work/contract.json"
	exit 0
fi

# release.json's binaries, for the platforms asked.
platforms=("${@:-linux/amd64}")
list=""
for p in "${platforms[@]}"; do list="$list${list:+, }\"$p\""; done
sed "s#\"platforms\": \[[^]]*\]#\"platforms\": [$list]#g" release.json >"$work/contract.json"
twice . "$work/contract.json"
