#!/usr/bin/env bash
# scripts/ollama.sh: build Ollama at a pinned version from the Go module proxy
# into a cache outside the clone, once per machine, and print the binary's
# path. The artagent integration tests (lib/agent/ollamatest) serve a tiny
# model of their own with it.
#
#   bin=$(scripts/ollama.sh)      # ~20 min the first time on two cores, then instant
#
# Ollama's cgo build compiles its ggml/llama.cpp CPU backend. The module zip
# lacks llama.cpp's vendor/ headers: Debian's nlohmann-json3-dev and
# libstb-dev provide json.hpp and stb_image.h; miniaudio.h is a stand-in of
# ours (scripts/ollama/miniaudio.h), because audio is never decoded.
# A half build is never used: the binary is installed under a temporary name
# and the completion marker written last.
#
# Environment: ART_CACHE (default /var/cache/art, or ~/.cache/art when not
# writable), OLLAMA_VERSION (default the pin below).
set -euo pipefail
# shellcheck source=scripts/cached-build.sh
. "$(dirname "$0")/cached-build.sh"
here="$(cd "$(dirname "$0")" && pwd)"
version="${OLLAMA_VERSION:-v0.17.4}"
cached_build ollama "$version" ollama

need=()
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/stb/stb_image.h ] || need+=(libstb-dev)
command -v g++ >/dev/null || need+=(g++)
if [ "${#need[@]}" -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "ollama.sh: missing Debian packages ${need[*]}; install them as root (apt-get install ${need[*]})" >&2
		exit 1
	fi
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

work="$(mktemp -d "$cache/ollama-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include/miniaudio" "$work/bin"
cp "$here/ollama/miniaudio.h" "$work/include/miniaudio/miniaudio.h"
inc="-I$work/include -I/usr/include/stb"
start=$(date +%s)
echo "ollama.sh: building ollama $version into $dest (about 20 minutes on two cores)" >&2
(
	cd "$work"
	# A module-mode build outside any module; the project's own go.mod is untouched.
	GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN="${GOTOOLCHAIN:-local}" \
		CGO_ENABLED=1 CGO_CPPFLAGS="$inc" CGO_CXXFLAGS="-O2 $inc" \
		GOBIN="$work/bin" go install "github.com/ollama/ollama@$version" >&2
)
rm -rf "$dest"
mkdir -p "$dest/bin"
mv "$work/bin/ollama" "$dest/bin/ollama.tmp"
mv "$dest/bin/ollama.tmp" "$dest/bin/ollama"
echo "$version built in $(($(date +%s) - start))s on $(date -u +%FT%TZ)" >"$marker.tmp"
sync "$dest/bin/ollama" "$marker.tmp" 2>/dev/null || true
mv "$marker.tmp" "$marker"
echo "ollama.sh: built in $(($(date +%s) - start))s" >&2
echo "$dest/bin/ollama"
