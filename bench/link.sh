#!/usr/bin/env bash
# Compares `hoster sync` with rsync across a link with a round-trip time, the
# way a developer or a CI runner pushes to a VPS:
#
#   hoster -> toxiproxy (latency) -> Caddy (the Caddyfile `hoster-server init`
#             writes; TLS with its self-signed IP certificate, pinned) -> hoster-server
#   rsync  -> toxiproxy (latency) -> rsync daemon (-r --checksum --delete)
#
# The kernel here has no netem, so the latency comes from toxiproxy, installed
# with `go install` at a pinned version. Everything listens on 127.0.0.1, on
# unprivileged ports. For each round trip and tree: first push, no-op, then 1%
# of the files modified and 1% deleted; each mirror is checked against the
# source, and a table is printed. The 0 ms row is the chain with no added
# latency: what each push costs in CPU and local I/O alone, the floor the
# other rows add round trips to.
#
#   bench/link.sh                       RTTS="0 20 50 100", TREES="2000:200 300:20"
#   RTTS=50 TREES=2000:200 bench/link.sh
#   HOSTER_ARGS="--jobs 64" bench/link.sh    extra flags for hoster sync
#   HOSTER=/tmp/hoster bench/link.sh        another build of the client
#   FIRST=rsync bench/link.sh               run rsync before hoster in each case
#   WARM=0 bench/link.sh                    no scratch write before each first push
#   FS=0 bench/link.sh                      destinations in /tmp's own file system
#
# As in bench/sync.sh: on this VM, writing into page-cache pages the host has
# to provide again, or creating files right after many were deleted, costs
# more, and whichever tool goes first meets more of it. So each tool's first
# push is preceded by writing and deleting a scratch file of 1.5x the tree
# (and, as root, by dropping the clean caches: see warm in bench/lib.sh), and
# FIRST=rsync shows the order does not decide the result.
#
# As root, both destinations (the hosting root and the rsync module) live on
# a fresh ext4 file system with a journal, in an image file mounted for the
# run, as a VPS's disk is. The root file system of the VM this was measured
# on has no journal, and there ext4, allocating an inode, skips every inode
# deleted in the last minute whose table block is cached: a first push of
# 2,000 files soon after 2,000 were deleted cost hoster-server up to twice
# its CPU there.
#
# The set-up is bench/lib.sh's, shared with bench/pull-link.sh.
set -euo pipefail
NAME=bench-link
RTTS=${RTTS:-0 20 50 100}
TREES=${TREES:-2000:200 300:20}
HOSTER_ARGS=${HOSTER_ARGS:-}
FIRST=${FIRST:-hoster}
WARM=${WARM:-1}
. "$(dirname "$0")/lib.sh"
bench_setup
bench_start "$D/srv" "$W/logs" "$W/logs" "$D/rsync" false

run_hoster() { timeit "$HOSTER" --config "$W/hoster.json" -q sync $HOSTER_ARGS "$W/src"; }
run_rsync() { timeit rsync -r --checksum --delete "$W/src/" rsync://$PROXY_RSYNC/bench/; }

files_of() { (cd "$1" && find . -type f ! -name hoster-env.d.ts -exec sha256sum {} + | sort -k2); }
tools=(hoster rsync)
[ "$FIRST" = rsync ] && tools=(rsync hoster)

rows=()
for tree in $TREES; do
	files=${tree%%:*} mib=${tree##*:}
	for rtt in $RTTS; do
		set_rtt "$rtt"
		rm -rf "$W/src" "$D/rsync"/* "$D/srv/hoster-games"/*
		go run ./bench/gentree -dir "$W/src" -files "$files" -mib "$mib"
		"$HOSTER" gen "$W/src" >/dev/null # both tools push the same files
		declare -A t=()
		for tool in "${tools[@]}"; do
			warm "$mib" "$W/src"
			[ "${CPU:-0}" = 1 ] && before=$(cpu_all)
			t[$tool.first]=$(run_$tool)
			[ "${CPU:-0}" = 1 ] && echo "$tool first push: CPU-s before: $before after: $(cpu_all)" >&2
		done
		for tool in "${tools[@]}"; do t[$tool.noop]=$(run_$tool); done
		go run ./bench/gentree -dir "$W/src" -modify
		for tool in "${tools[@]}"; do t[$tool.change]=$(run_$tool); done
		for tool in hoster rsync; do
			dest="$D/rsync"
			[ $tool = hoster ] && dest="$D/srv/hoster-games"
			# The files, by name and content. hoster-env.d.ts is for the author's
			# editor and sync leaves it out by design; and hoster mirrors files, not
			# folders (the server removes a folder a delete emptied), so a folder the
			# 1% delete emptied in the source is not compared.
			diff <(files_of "$W/src") <(files_of "$dest") >&2 || { echo "bench/link.sh: the $tool mirror differs from the source" >&2; exit 1; }
		done
		rows+=("$(printf '| %s files / %s MiB | %s ms | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s |' \
			"$files" "$mib" "$rtt" "${t[hoster.first]}" "${t[rsync.first]}" "${t[hoster.noop]}" "${t[rsync.noop]}" \
			"${t[hoster.change]}" "${t[rsync.change]}")")
		echo "${rows[-1]}  (one HTTPS request through the chain: $(probe) s)" >&2
	done
done

printf '\n%s cores (%s), hoster sync %s, first: %s, warm: %s, fresh ext4: %s\n' "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$HOSTER_ARGS" "$FIRST" "$WARM" "$FS"
echo '| tree | RTT | hoster first push | rsync first push | hoster no-op | rsync no-op | hoster 1% change | rsync 1% change |'
echo '|---|---|---|---|---|---|---|---|'
printf '%s\n' "${rows[@]}"
