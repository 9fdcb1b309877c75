# The set-up bench/link.sh and bench/pull-link.sh share, sourced by both:
#
#   client -> toxiproxy (latency) -> Caddy (the Caddyfile `hoster-server init`
#             writes; TLS with its self-signed IP certificate, pinned) -> hoster-server
#   rsync  -> toxiproxy (latency) -> rsync daemon
#
# The kernel here has no netem, so the latency comes from toxiproxy, installed
# with `go install` at a pinned version. Everything listens on 127.0.0.1, on
# unprivileged ports. A script sets NAME (for messages) and FS, then calls
# bench_setup, then bench_start with the roots; the functions below time
# and measure.
#
# Needs rsync, caddy, curl and bc: as root, it installs those missing with
# apt-get.
TOXIPROXY_VERSION=v2.5.0
FS=${FS:-1}

# bench_setup checks the tools, installs toxiproxy, builds hoster and
# hoster-server, and makes the work folder W and D, where the destinations
# live: as root, a fresh ext4 file system with a journal, in an image file
# mounted for the run, as a VPS's disk is (FS=0: in W).
bench_setup() {
	cd "$(dirname "$0")/.."
	for tool in rsync caddy curl bc; do
		command -v $tool >/dev/null && continue
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			apt-get install -y -q $tool >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $tool >/dev/null; }
		fi
		command -v $tool >/dev/null || { echo "$NAME: $tool is missing (apt-get install $tool)" >&2; exit 2; }
	done
	GOBIN_DIR=${TOXIPROXY_BIN:-$HOME/.cache/hoster-bench/toxiproxy-$TOXIPROXY_VERSION}
	if [ ! -x "$GOBIN_DIR/server" ]; then
		GOBIN="$GOBIN_DIR" go install "github.com/Shopify/toxiproxy/v2/cmd/...@$TOXIPROXY_VERSION"
	fi
	HOSTER=${HOSTER:-bin/hoster} # HOSTER=path runs another build of the client
	[ "$HOSTER" = bin/hoster ] && go build -o bin/hoster ./cmd/hoster
	go build -o bin/hoster-server ./cmd/hoster-server

	W=$(mktemp -d "/tmp/hoster-$NAME.XXXXXX")
	pids=()
	declare -gA procs=()
	trap bench_cleanup EXIT
	bench_fs 4G
}

# bench_fs SIZE sets D, where the destinations live: with FS=1, as root, a
# fresh ext4 file system with a journal of SIZE in an image file in W,
# mounted for the run, as a VPS's disk is; else W. (On a disk where many
# files were deleted lately, ext4 spends much of creating a file skipping
# their inodes: a fresh one measures the tools, not the disk's past.)
bench_fs() {
	D=$W
	if [ "$FS" = 1 ] && [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null &&
		truncate -s "$1" "$W/fs.img" && mkfs.ext4 -q -F "$W/fs.img" && mkdir "$W/fs" &&
		mount -o loop "$W/fs.img" "$W/fs"; then
		D=$W/fs
	else
		[ "$FS" = 1 ] && echo "$NAME: no fresh ext4 (needs root, mkfs.ext4 and a loop device): the destinations stay in $W" >&2
		FS=0
		rm -f "$W/fs.img"
	fi
}

bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ "$D" = "$W" ] || umount "$D" || true
	rm -rf "$W"
}

TOXI=127.0.0.1:18474
PROXY_HOSTER=127.0.0.1:18443 # what hoster dials
PROXY_RSYNC=127.0.0.1:18873  # what rsync dials
CADDY_HTTPS=18444
CADDY_HTTP=18081
SERVER=127.0.0.1:18787
ASK=127.0.0.1:18788
RSYNCD=127.0.0.1:18874

# bench_start HOSTING_ROOT LOGS_ROOT CADDY_LOGS RSYNC_PATH READ_ONLY [serve flags...]
# starts toxiproxy, hoster-server (set up by its own init, serving
# LOGS_ROOT) with Caddy in front (its access log in CADDY_LOGS), the rsync
# daemon's module bench at RSYNC_PATH, and the two proxies; it writes the
# client's configuration to $W/hoster.json.
bench_start() {
	local srv=$1 logs=$2 caddylogs=$3 rpath=$4 ro=$5
	shift 5
	"$GOBIN_DIR/server" -host 127.0.0.1 -port 18474 >"$W/toxiproxy.log" 2>&1 &
	pids+=($!) procs[toxiproxy]=$!
	bin/hoster-server init --hosting-root "$srv" --logs-root "$caddylogs" --ip 127.0.0.1 \
		--listen $SERVER --ask-listen $ASK --http-port $CADDY_HTTP --https-port $CADDY_HTTPS >"$W/init.txt"
	PIN=$(sed -n '/fingerprint:/{n;p}' "$W/init.txt" | tr -d ' ')
	# Bench-only global options: no admin endpoint (several Caddys may run on
	# this machine), and listen on loopback only.
	sed -i '0,/^{/s//{\n\tadmin off\n\tdefault_bind 127.0.0.1/' "$srv/Caddyfile"
	bin/hoster-server serve --hosting-root "$srv" --logs-root "$logs" --listen $SERVER --ask-listen $ASK "$@" \
		>"$W/server.log" 2>&1 &
	pids+=($!) procs[hoster-server]=$!
	XDG_DATA_HOME="$W/caddy-data" XDG_CONFIG_HOME="$W/caddy-config" \
		caddy run --config "$srv/Caddyfile" --adapter caddyfile >"$W/caddy.log" 2>&1 &
	pids+=($!) procs[caddy]=$!
	printf '{"hoster-config-server": "https://%s", "hoster-config-apiToken": "%s", "hoster-config-certSha256": "%s"}' \
		$PROXY_HOSTER "$(cat "$srv/hoster-token")" "$PIN" >"$W/hoster.json"

	mkdir -p "$rpath"
	cat >"$W/rsyncd.conf" <<CONF
use chroot = false
[bench]
path = $rpath
read only = $ro
uid = $(id -u)
gid = $(id -g)
CONF
	rsync --daemon --no-detach --config="$W/rsyncd.conf" --address=127.0.0.1 --port=${RSYNCD##*:} &
	pids+=($!) procs[rsyncd]=$!

	for i in $(seq 50); do
		curl -sf http://$TOXI/version >/dev/null && curl -skf https://127.0.0.1:$CADDY_HTTPS/api/version >/dev/null && break
		sleep 0.2
	done
	for p in "hoster $PROXY_HOSTER 127.0.0.1:$CADDY_HTTPS" "rsync $PROXY_RSYNC $RSYNCD"; do
		set -- $p
		toxi /proxies "{\"name\":\"$1\",\"listen\":\"$2\",\"upstream\":\"$3\"}"
		toxi /proxies/$1/toxics '{"name":"up","type":"latency","stream":"upstream","attributes":{"latency":0}}'
		toxi /proxies/$1/toxics '{"name":"down","type":"latency","stream":"downstream","attributes":{"latency":0}}'
	done
}

toxi() { curl -sf -X POST -H 'Content-Type: application/json' -d "$2" "http://$TOXI$1" >/dev/null; }

# set_rtt MS puts half the round trip on each direction of both proxies.
set_rtt() {
	local half=$(($1 / 2))
	for p in hoster rsync; do
		for s in up down; do toxi /proxies/$p/toxics/$s "{\"attributes\":{\"latency\":$half}}"; done
	done
}

now() { date +%s.%N; }
# timeit CMD... prints the seconds CMD took; its output goes to $W/last.out.
timeit() { local s e; s=$(now); "$@" >"$W/last.out" 2>&1 || { echo "failed: $*" >&2; cat "$W/last.out" >&2; return 1; }; e=$(now); echo "$e - $s" | bc; }
# CPU seconds (user+system, waited-for children included) of a process.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15+$16+$17)/hz}' /proc/$1/stat; }
# Where the CPU went: each process of the chain.
cpu_all() { local out="client=$(cpu $$) " p; for p in "${!procs[@]}"; do out+="$p=$(cpu ${procs[$p]}) "; done; echo "$out"; }
# The measured link: a no-op request's time through the whole chain.
probe() { curl -sk -o /dev/null -w '%{time_total}' --resolve x:1:127.0.0.1 https://$PROXY_HOSTER/api/version; }

# warm MIB SRC: before a first transfer, as in bench/sync.sh: on this VM,
# writing into page-cache pages the host has to provide again, or creating
# files right after many were deleted, costs more, and whichever tool goes
# first meets more of it. So each tool's first transfer is preceded by
# writing and deleting a scratch file of 1.5x the tree (MIB) in D and, as
# root, by dropping the clean caches and reading the source (SRC) again:
# ext4 without a journal skips, when it allocates an inode, every inode
# deleted in the last minute whose inode-table block is still cached, and
# each case begins by deleting the last one's mirrors; this way neither
# tool's first transfer meets them. WARM=0 skips it.
warm() {
	[ "${WARM:-1}" = 1 ] || return 0
	if [ -w /proc/sys/vm/drop_caches ]; then
		sync
		echo 1 >/proc/sys/vm/drop_caches
		find "$2" -type f -exec cat {} + >/dev/null
	fi
	dd if=/dev/zero of="$D/warm" bs=1M count=$(($1 * 3 / 2)) status=none
	rm -f "$D/warm"
}
