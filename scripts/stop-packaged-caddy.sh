#!/bin/sh
# Stops the caddy service that installing Debian's caddy package may have
# started (it listens on :80; the tests run their own Caddy), through the
# service manager only. It never stops a process by name: another Caddy on a
# shared machine is not ours to stop.
#
# Debian's package starts caddy.service only where systemd runs (its postinst
# goes through deb-systemd-invoke); without systemd it starts nothing, unless
# some other packaging added an init script, which the service command stops.
# HOSTER_SYSTEMD_RUN_DIR and HOSTER_INITD_DIR stand in for /run/systemd/system
# and /etc/init.d in its test (test/integration/testdeps_test.go).
set -u
if [ -d "${HOSTER_SYSTEMD_RUN_DIR:-/run/systemd/system}" ] && command -v systemctl >/dev/null 2>&1; then
	systemctl stop caddy.service >/dev/null 2>&1 ||
		echo "test-deps: systemctl stop caddy failed; if Caddy holds port 80, stop it yourself" >&2
elif [ -x "${HOSTER_INITD_DIR:-/etc/init.d}/caddy" ] && command -v service >/dev/null 2>&1; then
	service caddy stop >/dev/null 2>&1 ||
		echo "test-deps: service caddy stop failed; if Caddy holds port 80, stop it yourself" >&2
fi
exit 0
