#!/usr/bin/env bash
# scripts/jaeger.sh: build Jaeger's all-in-one at a pinned version from the Go
# module proxy into a cache outside the clone, once per machine, and print the
# binary's path. The OpenTelemetry export tests (lib/obs/otlp/jaegertest)
# start it with an in-memory store and read traces back from its query API.
#
#   bin=$(scripts/jaeger.sh)      # many minutes the first time on two cores, then instant
#
# The build happens in a throwaway module (go get -tool), so the project's own
# go.mod never depends on Jaeger. A half build is never used: the binary is
# installed under a temporary name and the completion marker written last.
#
# Environment: ART_CACHE (default /var/cache/art, or ~/.cache/art when not
# writable), JAEGER_VERSION (default the pin below).
set -euo pipefail
# shellcheck source=scripts/cached-build.sh
. "$(dirname "$0")/cached-build.sh"
version="${JAEGER_VERSION:-v1.76.0}"
cached_build jaeger "$version" jaeger

work="$(mktemp -d "$cache/jaeger-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
echo "jaeger.sh: building jaeger $version into $dest" >&2
(
	cd "$work"
	export GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0
	go mod init art.invalid/jaegerbuild >/dev/null 2>&1
	go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version" >&2
	go build -trimpath -o "$work/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger >&2
)
rm -rf "$dest"
mkdir -p "$dest/bin"
mv "$work/jaeger" "$dest/bin/jaeger.tmp"
mv "$dest/bin/jaeger.tmp" "$dest/bin/jaeger"
echo "$version built in $(($(date +%s) - start))s on $(date -u +%FT%TZ)" >"$marker.tmp"
sync "$dest/bin/jaeger" "$marker.tmp" 2>/dev/null || true
mv "$marker.tmp" "$marker"
echo "jaeger.sh: built in $(($(date +%s) - start))s" >&2
echo "$dest/bin/jaeger"
