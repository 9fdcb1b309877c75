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
# (and, as root, by dropping the clean caches: see warm below), and
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
# Needs rsync (apt-get install rsync) and caddy (apt-get install caddy).
set -euo pipefail
TOXIPROXY_VERSION=v2.5.0
RTTS=${RTTS:-0 20 50 100}
TREES=${TREES:-2000:200 300:20}
HOSTER_ARGS=${HOSTER_ARGS:-}
FIRST=${FIRST:-hoster}
WARM=${WARM:-1}
FS=${FS:-1}
cd "$(dirname "$0")/.."
for tool in rsync caddy curl bc; do
	command -v $tool >/dev/null || { echo "bench/link.sh: $tool is missing (apt-get install $tool)" >&2; exit 2; }
done
GOBIN_DIR=${TOXIPROXY_BIN:-$HOME/.cache/hoster-bench/toxiproxy-$TOXIPROXY_VERSION}
if [ ! -x "$GOBIN_DIR/server" ]; then
	GOBIN="$GOBIN_DIR" go install "github.com/Shopify/toxiproxy/v2/cmd/...@$TOXIPROXY_VERSION"
fi
HOSTER=${HOSTER:-bin/hoster} # HOSTER=path runs another build of the client
[ "$HOSTER" = bin/hoster ] && go build -o bin/hoster ./cmd/hoster
go build -o bin/hoster-server ./cmd/hoster-server

W=$(mktemp -d /tmp/hoster-bench-link.XXXXXX)
D=$W # where the destinations live
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ "$D" = "$W" ] || umount "$D" || true
	rm -rf "$W"
}
trap cleanup EXIT
if [ "$FS" = 1 ] && [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null &&
	truncate -s 4G "$W/fs.img" && mkfs.ext4 -q -F "$W/fs.img" && mkdir "$W/fs" &&
	mount -o loop "$W/fs.img" "$W/fs"; then
	D=$W/fs
else
	[ "$FS" = 1 ] && echo "bench/link.sh: no fresh ext4 (needs root, mkfs.ext4 and a loop device): the destinations stay in $W" >&2
	FS=0
	rm -f "$W/fs.img"
fi

TOXI=127.0.0.1:18474
PROXY_HOSTER=127.0.0.1:18443 # what hoster dials
PROXY_RSYNC=127.0.0.1:18873  # what rsync dials
CADDY_HTTPS=18444
CADDY_HTTP=18081
SERVER=127.0.0.1:18787
ASK=127.0.0.1:18788
RSYNCD=127.0.0.1:18874

declare -A procs=()
"$GOBIN_DIR/server" -host 127.0.0.1 -port 18474 >"$W/toxiproxy.log" 2>&1 &
pids+=($!) procs[toxiproxy]=$!

# hoster-server set up by its own init, with Caddy in front.
bin/hoster-server init --hosting-root "$D/srv" --logs-root "$W/logs" --ip 127.0.0.1 \
	--listen $SERVER --ask-listen $ASK --http-port $CADDY_HTTP --https-port $CADDY_HTTPS >"$W/init.txt"
PIN=$(sed -n '/fingerprint:/{n;p}' "$W/init.txt" | tr -d ' ')
# Bench-only global options: no admin endpoint (several Caddys may run on
# this machine), and listen on loopback only.
sed -i '0,/^{/s//{\n\tadmin off\n\tdefault_bind 127.0.0.1/' "$D/srv/Caddyfile"
bin/hoster-server serve --hosting-root "$D/srv" --logs-root "$W/logs" --listen $SERVER --ask-listen $ASK \
	>"$W/server.log" 2>&1 &
pids+=($!) procs[hoster-server]=$!
XDG_DATA_HOME="$W/caddy-data" XDG_CONFIG_HOME="$W/caddy-config" \
	caddy run --config "$D/srv/Caddyfile" --adapter caddyfile >"$W/caddy.log" 2>&1 &
pids+=($!) procs[caddy]=$!
printf '{"hoster-config-server": "https://%s", "hoster-config-apiToken": "%s", "hoster-config-certSha256": "%s"}' \
	$PROXY_HOSTER "$(cat "$D/srv/hoster-token")" "$PIN" >"$W/hoster.json"

# rsync daemon
mkdir -p "$D/rsync"
cat >"$W/rsyncd.conf" <<CONF
use chroot = false
[bench]
path = $D/rsync
read only = false
uid = $(id -u)
gid = $(id -g)
CONF
rsync --daemon --no-detach --config="$W/rsyncd.conf" --address=127.0.0.1 --port=${RSYNCD##*:} &
pids+=($!) procs[rsyncd]=$!

for i in $(seq 50); do
	curl -sf http://$TOXI/version >/dev/null && curl -skf https://127.0.0.1:$CADDY_HTTPS/api/version >/dev/null && break
	sleep 0.2
done
api() { curl -sf -X POST -H 'Content-Type: application/json' -d "$2" "http://$TOXI$1" >/dev/null; }
for p in "hoster $PROXY_HOSTER 127.0.0.1:$CADDY_HTTPS" "rsync $PROXY_RSYNC $RSYNCD"; do
	set -- $p
	api /proxies "{\"name\":\"$1\",\"listen\":\"$2\",\"upstream\":\"$3\"}"
	api /proxies/$1/toxics '{"name":"up","type":"latency","stream":"upstream","attributes":{"latency":0}}'
	api /proxies/$1/toxics '{"name":"down","type":"latency","stream":"downstream","attributes":{"latency":0}}'
done
set_rtt() {
	local half=$(($1 / 2))
	for p in hoster rsync; do
		for s in up down; do api /proxies/$p/toxics/$s "{\"attributes\":{\"latency\":$half}}"; done
	done
}

now() { date +%s.%N; }
timeit() { local s e; s=$(now); "$@" >"$W/last.out" 2>&1 || { echo "failed: $*" >&2; cat "$W/last.out" >&2; return 1; }; e=$(now); echo "$e - $s" | bc; }
run_hoster() { timeit "$HOSTER" --config "$W/hoster.json" -q sync $HOSTER_ARGS "$W/src"; }
# CPU seconds (user+system, waited-for children included) of a process.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15+$16+$17)/hz}' /proc/$1/stat; }
# With CPU=1, where the CPU went during each first push: each process of the chain.
cpu_all() { local out="client=$(cpu $$) " p; for p in "${!procs[@]}"; do out+="$p=$(cpu ${procs[$p]}) "; done; echo "$out"; }
run_rsync() { timeit rsync -r --checksum --delete "$W/src/" rsync://$PROXY_RSYNC/bench/; }
# The measured link: a no-op request's time through the whole chain.
probe() { curl -sk -o /dev/null -w '%{time_total}' --resolve x:1:127.0.0.1 https://$PROXY_HOSTER/api/version; }

warm() {
	[ "$WARM" = 1 ] || return 0
	if [ -w /proc/sys/vm/drop_caches ]; then
		# As root: write back and drop the clean caches, then read the source
		# again. ext4 without a journal skips, when it allocates an inode,
		# every inode deleted in the last minute whose inode-table block is
		# still cached, and each case begins by deleting the last one's
		# mirrors; this way neither tool's first push meets them.
		sync
		echo 1 >/proc/sys/vm/drop_caches
		find "$W/src" -type f -exec cat {} + >/dev/null
	fi
	dd if=/dev/zero of="$D/warm" bs=1M count=$(($1 * 3 / 2)) status=none
	rm -f "$D/warm"
}
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
			warm "$mib"
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
