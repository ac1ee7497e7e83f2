# scripts/cached-build.sh: sourced by the scripts that build a test server
# once per machine (scripts/ollama.sh, scripts/jaeger.sh). Given NAME,
# VERSION and BIN (the binary's name), it sets cache (ART_CACHE, default
# /var/cache/art, else ~/.cache/art when that is not writable), dest
# ($cache/NAME-VERSION) and marker, prints the binary's path and exits when
# a complete build is there, and otherwise holds the cache's lock for NAME
# and VERSION (a second caller waits for the first, then finds its build).
cached_build() {
	local name=$1 version=$2 bin=$3
	cache="${ART_CACHE:-/var/cache/art}"
	if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
		cache="${XDG_CACHE_HOME:-$HOME/.cache}/art"
		mkdir -p "$cache"
	fi
	dest="$cache/$name-$version"
	marker="$dest/.complete"
	if [ -f "$marker" ] && [ -x "$dest/bin/$bin" ]; then
		echo "$dest/bin/$bin"
		exit 0
	fi
	exec 9>"$cache/$name-$version.lock"
	flock 9
	if [ -f "$marker" ] && [ -x "$dest/bin/$bin" ]; then
		echo "$dest/bin/$bin"
		exit 0
	fi
}
