#!/usr/bin/env bash
# bench/vs-colyseus.sh [PLAYERS...]: hoster-server against Colyseus, side by
# side in one run. The same game (bench/load's: 20 players a room, 50
# wandering entities, tick 20 Hz, updates 10 Hz, no interest filtering) runs
# in hoster-server and as a Colyseus 0.18 room (bench/colyseus, installed
# here with npm from its lock file, Node 22 included); the same Go bots
# (bench/load -peer) drive each in turn from their own process, each moving
# 10 times a second. Server CPU comes from /proc/PID/stat over the window
# (hoster-server's process and its game workers, --isolation process),
# bytes per update as received on the wire. The command latency is timed at
# the bots: one bot in 10 sends one move at a time, and times it from its
# write to its read of the first update in which its own player changed
# (loopback both ways, the wait for the server's tick and send round).
#
# Environment: SECS (measured window, default 20), VISIBLE=1 (each player
# sees only what is within 25 units: hoster's visibility hook against
# Colyseus's StateView), FIRST=colyseus (run Colyseus first at each size),
# RUNS (runs at each size, default 1), FORMAT (what hoster's bots ask for:
# compact, the default, as the browser library does, or json),
# BENCH_SERVER_LOG=FILE (hoster-server's output appended there, to read
# after a run that went wrong).
set -euo pipefail
cd "$(dirname "$0")/.."

players=("$@")
[ ${#players[@]} -gt 0 ] || players=(200 500 1000 2000)
secs=${SECS:-20}
runs=${RUNS:-1}
format=${FORMAT:-compact}
extra=()
[ "${VISIBLE:-}" = 1 ] && extra+=(-visible)
order=(hoster colyseus)
[ "${FIRST:-hoster}" = colyseus ] && order=(colyseus hoster)

mkdir -p bin
go build -o bin/hoster-server ./cmd/hoster-server
go build -o bin/bench-load ./bench/load
# Installed once per lock file (the stamp holds its hash). npm install, not
# npm ci: ci refuses this lock over the other platforms' optional msgpackr
# builds it leaves out; install keeps to the lock and leaves it unchanged.
lock=$(sha256sum bench/colyseus/package-lock.json | cut -d' ' -f1)
if [ "$(cat bench/colyseus/node_modules/.hoster-lock 2>/dev/null)" != "$lock" ]; then
	(cd bench/colyseus && npm install --no-audit --no-fund --loglevel=error)
	echo "$lock" >bench/colyseus/node_modules/.hoster-lock
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for n in "${players[@]}"; do
	for ((r = 1; r <= runs; r++)); do
		for peer in "${order[@]}"; do
			echo "== $peer, $n players, run $r" >&2
			res=$(bin/bench-load -peer "$peer" -format "$format" -players "$n" -seconds "$secs" "${extra[@]}" \
				-server-bin bin/hoster-server -colyseus-dir bench/colyseus 2>/dev/null) || true
			echo "$res" >&2
			grep '^RESULT' <<<"$res" >>"$out" || true
		done
	done
done

echo
echo "hoster-server ($format) / Colyseus, $(nproc) cores, ${secs} s windows$([ "${VISIBLE:-}" = 1 ] && echo ', visibility hook / StateView')"
echo
awk '
function v(line, key,   m) { if (match(line, " " key "=[^ ]*")) { m = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2); return m } return "" }
/peer=hoster/ { h[++nh] = $0 }
/peer=colyseus/ { c[++nc] = $0 }
END {
	print "| players | server CPU hoster / Colyseus | RSS MiB (PSS) | updates per player per s | bytes per update | command to update p50 / p99 ms | players thrown out, silent | instances closed | hoster run queue (median) |"
	print "|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nh && i <= nc; i++) {
		hc = v(h[i], "cpu"); cc = v(c[i], "cpu"); hb = v(h[i], "bpu"); cb = v(c[i], "bpu")
		printf "| %s | %.2f / %.2f cores (%.1fx) | %s (%s) / %s (%s) | %s / %s | %s / %s (%.1fx) | %.0f / %.0f, %.0f / %.0f | %s, %s / %s, %s | %s | %s |\n",
			v(h[i], "players"), hc, cc, (cc > 0 ? hc / cc : 0), v(h[i], "rss_mib"), v(h[i], "pss_mib"), v(c[i], "rss_mib"), v(c[i], "pss_mib"),
			v(h[i], "ups"), v(c[i], "ups"), hb, cb, (cb > 0 ? hb / cb : 0),
			v(h[i], "cmd_p50_ms"), v(h[i], "cmd_p99_ms"), v(c[i], "cmd_p50_ms"), v(c[i], "cmd_p99_ms"),
			v(h[i], "thrown"), v(h[i], "silent"), v(c[i], "thrown"), v(c[i], "silent"), v(h[i], "closed"), v(h[i], "runq")
	}
}' "$out"
echo
echo "Command to update: at the bots, one in 10 moving one move at a time, from its write of a move to its read of the first update its own player changed in, hoster p50 / p99, Colyseus p50 / p99 (loopback both ways included)."
