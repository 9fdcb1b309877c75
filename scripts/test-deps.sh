#!/bin/sh
# Installs the Debian packages the integration tests use (caddy for the proxy
# test, chromium for the browser test) when they are missing and this user may
# install them. Without them those tests skip and say why.
set -u
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
	# Debian's caddy package starts its own service on :80; the tests start theirs.
	command -v systemctl >/dev/null 2>&1 && systemctl stop caddy >/dev/null 2>&1
	pkill -x caddy >/dev/null 2>&1 ;;
esac
exit 0
