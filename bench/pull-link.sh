#!/usr/bin/env bash
# Compares `hoster pull` with rsync across a link with a round-trip time, the
# way a cron job mirrors a host's logs:
#
#   hoster pull -> toxiproxy (latency) -> Caddy (TLS, pinned) -> hoster-server
#   rsync -r --append-verify -> toxiproxy (latency) -> rsync daemon
#
# both reading the same logs root (bench/genlogs: a month of a small host's
# logs, 3,195 files and 80 MiB with 4 games; GAMES=40 is ten times the hour
# files). For each round trip: the first pull into an empty mirror, a no-op,
# then an hour later (bench/genlogs -hour: 1 MiB onto access.log, a line
# onto each game's hour file, a new hour file a game, 16 KiB onto today's
# day-files). Both mirrors are then compared with the logs root file by
# file (hoster names a rotated access log by its key, not its name: those
# are compared by content), and a table is printed. The set-up is
# bench/lib.sh's, shared with bench/link.sh; hoster-server's own access log
# (Caddy's) and health samples go elsewhere, so the logs root holds still.
#
#   bench/pull-link.sh                  RTTS="0 20 50 100", GAMES="4"
#   RTTS="20 50" GAMES="4 40" bench/pull-link.sh
#   HOSTER_ARGS="-q" HOSTER=/tmp/hoster bench/pull-link.sh
#   FIRST=rsync bench/pull-link.sh      run rsync before hoster in each case
#   CPU=1 bench/pull-link.sh            where the CPU went in each first pull
#   WARM=0 FS=0 bench/pull-link.sh      as in bench/link.sh
set -euo pipefail
NAME=bench-pull-link
RTTS=${RTTS:-0 20 50 100}
GAMES=${GAMES:-4}
HOSTER_ARGS=${HOSTER_ARGS:-}
FIRST=${FIRST:-hoster}
TODAY=$(date -u +%F)
. "$(dirname "$0")/lib.sh"
bench_setup
LOGS=$W/logs
go run ./bench/genlogs -dir "$LOGS" -games "${GAMES%% *}" -today "$TODAY"
bench_start "$D/srv" "$LOGS" "$W/caddy-logs" "$LOGS" true --stats-interval 1000h

run_hoster() { timeit "$HOSTER" --config "$W/hoster.json" -q pull $HOSTER_ARGS "$D/hoster-mirror"; }
run_rsync() { timeit rsync -r --append-verify rsync://$PROXY_RSYNC/bench/ "$D/rsync-mirror/"; }
# files_of DIR: each file's hash and path; the rotated access logs' by hash.
files_of() {
	(cd "$1" && find . -type f -exec sha256sum {} + | sed -E 's#  \./web-logs/access-[^/]*\.log$#  ./web-logs/rotated#' | sort -k2 -k1)
}
tools=(hoster rsync)
[ "$FIRST" = rsync ] && tools=(rsync hoster)

rows=()
for games in $GAMES; do
	for rtt in $RTTS; do
		set_rtt "$rtt"
		rm -rf "$LOGS"/* "$D/hoster-mirror" "$D/rsync-mirror"
		go run ./bench/genlogs -dir "$LOGS" -games "$games" -today "$TODAY"
		files=$(find "$LOGS" -type f | wc -l) mib=$(du -sm "$LOGS" | cut -f1)
		declare -A t=()
		for tool in "${tools[@]}"; do
			warm "$mib" "$LOGS"
			[ "${CPU:-0}" = 1 ] && before=$(cpu_all)
			t[$tool.first]=$(run_$tool)
			[ "${CPU:-0}" = 1 ] && echo "$tool first pull: CPU-s before: $before after: $(cpu_all)" >&2
		done
		for tool in "${tools[@]}"; do t[$tool.noop]=$(run_$tool); done
		go run ./bench/genlogs -dir "$LOGS" -games "$games" -today "$TODAY" -hour
		for tool in "${tools[@]}"; do t[$tool.hour]=$(run_$tool); done
		for tool in hoster rsync; do
			diff <(files_of "$LOGS") <(files_of "$D/$tool-mirror") >&2 ||
				{ echo "$NAME: the $tool mirror differs from the logs root" >&2; exit 1; }
		done
		rows+=("$(printf '| %s files / %s MiB | %s ms | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s |' \
			"$files" "$mib" "$rtt" "${t[hoster.first]}" "${t[rsync.first]}" "${t[hoster.noop]}" "${t[rsync.noop]}" \
			"${t[hoster.hour]}" "${t[rsync.hour]}")")
		echo "${rows[-1]}  (one HTTPS request through the chain: $(probe) s)" >&2
	done
done

printf '\n%s cores (%s), hoster pull %s, first: %s, warm: %s, fresh ext4: %s\n' "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$HOSTER_ARGS" "$FIRST" "${WARM:-1}" "$FS"
echo '| tree | RTT | hoster first pull | rsync first pull | hoster no-op | rsync no-op | hoster an hour later | rsync an hour later |'
echo '|---|---|---|---|---|---|---|---|'
printf '%s\n' "${rows[@]}"
