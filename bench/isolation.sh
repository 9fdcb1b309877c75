#!/usr/bin/env bash
# bench/isolation.sh [PLAYERS]: the goals of games in worker processes
# (hoster-server serve --isolation process), measured from outside with
# bench/load's bots (its -scenario isolation and kill, bench/load/isolation.go).
#
# 0. Alone, SECS (default 60) seconds: the load game of 1. by itself, the
#    same way: what this machine's other work does to it (ALONE=0 skips it).
# 1. Isolation, SECS (default 60) seconds: the load game (bench/load's:
#    20 players a room, 50 entities, tick 20 Hz, updates 10 Hz) with PLAYERS
#    (default 200) bots, beside a game whose tick keeps 1 MB more of numbers
#    each tick (4 players, a budget of 256 MiB: its players rejoin as the
#    browser library does, so its worker is ended again and again until it
#    is held stopped) and a game whose every instance spins a core from a
#    timer (two rooms per core). Reported: the normal game's updates per
#    player per second (mean and worst second), its players thrown out, each
#    hostile worker's end after it crossed its budget (its resident memory
#    sampled from /proc every 10 ms, against the parent's log lines), the
#    close codes its players got, each process's CPU, and the server's peak
#    resident memory (parent and workers, sampled) against the sum of the
#    budgets plus the parent's own.
# 2. Kill, KILL_SECS (default 20) seconds: the load game with PLAYERS bots
#    that rejoin as the browser library does (pkg/gen/js/client.js's rule),
#    beside a second game with 20 bots; 5 s in, kill -9 of the load game's
#    worker: its players' close code, the time from the kill to each one's
#    welcome in a fresh instance, and whether the other game noticed.
#
# LOGS=DIR keeps each scenario's server log there (DIR/SCENARIO.log).
#
# The server runs at the script's priority, as in production (its game
# workers lower themselves to nice 10); the bots lower theirs to NICE
# (default 10) once it runs, so that they do not take the workers' CPU as
# no production server's clients do.
# The machine's load average is printed beside the figures: on a shared
# machine, other work moves them.
set -euo pipefail
case "${1:-}" in
-h | --help)
	sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
esac
cd "$(dirname "$0")/.."
players=${1:-200}
secs=${SECS:-60}
ksecs=${KILL_SECS:-20}
nice=${NICE:-10}

mkdir -p bin
go build -o bin/hoster-server ./cmd/hoster-server
go build -o bin/bench-load ./bench/load

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
scenarios=(alone isolation kill)
[ "${ALONE:-1}" = 0 ] && scenarios=(isolation kill)
for scenario in "${scenarios[@]}"; do
	s=$secs
	[ $scenario = kill ] && s=$ksecs
	echo "== $scenario, $players players, $s s" >&2
	logs=()
	[ -n "${LOGS:-}" ] && mkdir -p "$LOGS" && logs=(-server-log "$LOGS/$scenario.log")
	res=$(bin/bench-load -scenario $scenario -players "$players" -seconds "$s" -bots-nice "$nice" "${logs[@]}" -server-bin bin/hoster-server 2>"$out.err") ||
		{ cat "$out.err" >&2; rm -f "$out.err"; exit 1; }
	rm -f "$out.err"
	echo "$res" >&2
	grep -E '^(RESULT|END|SERIES)' <<<"$res" | sed "/^SERIES/s/^/$scenario /" >>"$out" || true
done

echo
echo "hoster-server --isolation process, $(nproc) cores, bots at nice $nice, load average (1, 5, 15 min) at each scenario's end as shown"
echo
awk '
function v(line, key,   m) { if (match(line, " " key "=[^ ]*")) { m = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2); return m } return "" }
/^RESULT scenario=isolation/ { i = $0 }
/^RESULT scenario=alone/ { a = $0 }
/^RESULT scenario=kill/ { k = $0 }
/^END / { e[++ne] = $0 }
/^isolation SERIES/ { si = $3 }
/^alone SERIES/ { sa = $3 }
/^kill SERIES/ { sk = $3; so = $5 }
END {
	if (i != "" || a != "") {
		print "**A normal game beside a growing and a spinning one, and alone** (" v(i, "seconds") " s)"
		print ""
		print "| normal game | updates per player per s, mean / worst second | players thrown out | CPU cores: parent / normal / spinning / growing / ended workers | peak RSS, parent + workers | sum of budgets + parent | growing game: close codes its players got | load average at the end |"
		print "|---|---|---|---|---|---|---|---|"
		if (a != "")
			printf "| alone: %s of %s players | %s / %s (second %s) | %s | %s / %s / - / - / - | %s MiB | %s + %s MiB | - | %s |\n",
				v(a, "connected"), v(a, "players"), v(a, "ups"), v(a, "ups_worst"), v(a, "worst_at"), v(a, "thrown"),
				v(a, "parent_cores"), v(a, "normal_cores"), v(a, "peak_rss_mib"), v(a, "budgets_mib"), v(a, "parent_peak_mib"), v(a, "load")
		if (i != "")
			printf "| beside them: %s of %s players | %s / %s (second %s) | %s | %s / %s / %s (%s rooms) / %s / %s | %s MiB | %s + %s MiB | %s | %s |\n",
				v(i, "connected"), v(i, "players"), v(i, "ups"), v(i, "ups_worst"), v(i, "worst_at"), v(i, "thrown"),
				v(i, "parent_cores"), v(i, "normal_cores"), v(i, "spin_cores"), v(i, "spin_rooms"), v(i, "grow_cores"), v(i, "ended_cores"),
				v(i, "peak_rss_mib"), v(i, "budgets_mib"), v(i, "parent_peak_mib"), v(i, "codes"), v(i, "load")
		print ""
		if (sa != "") print "The normal game'"'"'s updates per player, each second, alone: " sa
		if (sa != "") print ""
		print "The normal game'"'"'s updates per player, each second, beside them: " si
		print ""
		print "| worker ended, at second | budget | RSS at the first sample over it | its peak RSS | crossing to the parent'"'"'s log line | crossing to its players closed | crossing to the process gone | samples over the budget, of those since the crossing | code |"
		print "|---|---|---|---|---|---|---|---|---|"
		for (n = 1; n <= ne; n++)
			printf "| %s (%s), %s | %s MiB | %s MiB | %s MiB | %s ms | %s ms | %s ms | %s | %s |\n",
				v(e[n], "game"), v(e[n], "pid"), v(e[n], "at_s"), v(e[n], "budget_mib"), v(e[n], "rss_at_cross_mib"), v(e[n], "peak_mib"),
				v(e[n], "over_log_ms"), v(e[n], "ended_log_ms"), v(e[n], "gone_ms"), v(e[n], "overs"), v(e[n], "code")
		print ""
	}
	if (k != "") {
		print "**kill -9 of the normal game'"'"'s worker** (" v(k, "seconds") " s, killed 5 s in; load " v(k, "load") ")"
		print ""
		print "| players | close codes they got | rejoined, in rooms | kill to welcome p50 / p99 / max | the rejoin'"'"'s own join p50 / p99 | parent noticed after | its worst second (updates per player) | other game: thrown out, updates per player per s mean / worst second |"
		print "|---|---|---|---|---|---|---|---|"
		printf "| %s of %s | %s | %s, %s | %s / %s / %s ms | %s / %s ms | %s ms | %s (second %s) | %s of %s, %s / %s (second %s) |\n",
			v(k, "connected"), v(k, "players"), v(k, "codes"), v(k, "rejoined"), v(k, "rooms_after"),
			v(k, "rejoin_p50_ms"), v(k, "rejoin_p99_ms"), v(k, "rejoin_max_ms"), v(k, "rejoin_join_p50_ms"), v(k, "rejoin_join_p99_ms"),
			v(k, "parent_noticed_ms"), v(k, "normal_worst"), v(k, "normal_worst_at"),
			v(k, "other_thrown"), v(k, "other_connected"), v(k, "other_ups"), v(k, "other_worst"), v(k, "other_worst_at")
		print ""
		print "Updates per player, each second: the killed game " sk "; the other game " so
	}
}' "$out"
