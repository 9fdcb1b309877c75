#!/bin/sh
# Installs the Debian packages the integration tests use (caddy for the proxy
# test, chromium for the browser test) when they are missing and this user may
# install them. Without them those tests skip and say why.
set -u

# The TypeScript compiler for gen --check's tests, pinned, from the npm
# registry into a cache folder of its own (the Makefile points HOSTER_TSC at it).
tsdir="${XDG_CACHE_HOME:-$HOME/.cache}/hoster-test/typescript"
if [ ! -x "$tsdir/node_modules/.bin/tsc" ] && command -v npm >/dev/null 2>&1; then
	echo "test-deps: installing typescript@5.9.3 into $tsdir" >&2
	mkdir -p "$tsdir" && npm install --prefix "$tsdir" --no-audit --no-fund --silent typescript@5.9.3 >/dev/null 2>&1 ||
		echo "test-deps: could not install typescript; the type-check tests will skip" >&2
fi

missing=""
command -v caddy >/dev/null 2>&1 || missing="$missing caddy"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "test-deps: not installing$missing (needs root and apt-get); those tests will skip" >&2
	exit 0
fi
echo "test-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || echo "test-deps: apt-get update failed" >&2
apt-get install -y -qq $missing >/dev/null 2>&1 || echo "test-deps: could not install$missing; those tests will skip" >&2
case "$missing" in *caddy*)
	# Debian's caddy package may start its own service on :80; the tests
	# start theirs. Only that service is stopped, never a Caddy by name.
	sh "$(dirname "$0")/stop-packaged-caddy.sh" ;;
esac
exit 0
