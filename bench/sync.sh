#!/usr/bin/env bash
# Compares `hoster sync` with rsync (to an rsync daemon, --checksum --delete)
# and rclone (to `rclone serve webdav`, --checksum), all on loopback, on the
# same generated tree: first push, no-op, and 1% modified + 1% deleted.
#
#   bench/sync.sh [FILES MIB]       default 2000 200; try 20000 1024
#   RCLONE=0 bench/sync.sh ...      leave rclone out (its first push of 1 GB takes minutes)
#   FIRST=rsync bench/sync.sh ...   run rsync before hoster in each case (default: hoster first)
#
# The order can weigh on the first push on ext4: creating files is slower
# for a few minutes after many files were deleted (new inodes are found past
# the recently deleted ones), and this script and its previous run delete
# tens of thousands. Run it both ways to see it does not decide the result.
#
# On a VM whose freed memory goes back to the host (virtio-balloon free page
# reporting), writing into page-cache pages the host has to provide again
# costs far more than into pages it still backs: 1 GiB with dd took 2.1 s
# three seconds after a delete and 0.2 s right after it. A first push writes
# the whole tree, so whichever tool meets more such pages looks slower. Each
# tool's first push is therefore preceded by writing and deleting a scratch
# file of 1.5x the tree, so that both start with memory the host backs.
# WARM=0 leaves this out.
#
# Needs rsync and rclone (apt-get install rsync rclone); builds hoster itself.
set -euo pipefail
FILES=${1:-2000}
MIB=${2:-200}
RCLONE=${RCLONE:-1}
FIRST=${FIRST:-hoster}
WARM=${WARM:-1}
cd "$(dirname "$0")/.."
needed=(rsync)
[ "$RCLONE" = 1 ] && needed+=(rclone)
for tool in "${needed[@]}"; do
	command -v $tool >/dev/null || { echo "bench/sync.sh: $tool is missing (apt-get install $tool, or RCLONE=0 to leave rclone out)" >&2; exit 2; }
done
go build -o bin/hoster ./cmd/hoster
go build -o bin/hoster-server ./cmd/hoster-server
W=$(mktemp -d /tmp/hoster-bench-sync.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT

go run ./bench/gentree -dir "$W/src" -files "$FILES" -mib "$MIB"
bin/hoster gen "$W/src" >/dev/null          # every tool sees the same files

# hoster-server
mkdir -p "$W/hoster/srv"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/hoster/srv/hoster-token"
bin/hoster-server serve --hosting-root "$W/hoster/srv" --logs-root "$W/hoster/logs" \
	--listen 127.0.0.1:18787 --ask-listen 127.0.0.1:18788 >"$W/hoster/server.log" 2>&1 &
pids+=($!)
printf '{"hoster-config-server": "http://127.0.0.1:18787", "hoster-config-apiToken": "%s"}' \
	"$(cat "$W/hoster/srv/hoster-token")" > "$W/hoster/hoster.json"

# rsync daemon
mkdir -p "$W/rsync/dest"
cat > "$W/rsync/rsyncd.conf" <<CONF
use chroot = false
[bench]
path = $W/rsync/dest
read only = false
uid = $(id -u)
gid = $(id -g)
CONF
rsync --daemon --no-detach --config="$W/rsync/rsyncd.conf" --address=127.0.0.1 --port=18730 &
pids+=($!)

# rclone webdav
if [ "$RCLONE" = 1 ]; then
	mkdir -p "$W/rclone/dest"
	rclone serve webdav "$W/rclone/dest" --addr 127.0.0.1:18731 >"$W/rclone/serve.log" 2>&1 &
	pids+=($!)
fi
sleep 2

now() { date +%s.%N; }
timeit() { local s e; s=$(now); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }; e=$(now); echo "$e - $s" | bc; }
warm() {
	[ "$WARM" = 1 ] || return 0
	dd if=/dev/zero of="$W/warm" bs=1M count=$((MIB * 3 / 2)) status=none
	rm -f "$W/warm"
}
run_hoster() { timeit bin/hoster --config "$W/hoster/hoster.json" -q sync "$W/src"; }
run_rsync()  { timeit rsync -r --checksum --delete "$W/src/" rsync://127.0.0.1:18730/bench/; }
run_rclone() { RCLONE_WEBDAV_URL=http://127.0.0.1:18731 timeit rclone sync --checksum "$W/src" :webdav: ; }

tools=(hoster rsync)
[ "$FIRST" = rsync ] && tools=(rsync hoster)
[ "$RCLONE" = 1 ] && tools+=(rclone)
declare -A first noop change
for t in "${tools[@]}"; do warm; first[$t]=$(run_$t); done
for t in "${tools[@]}"; do noop[$t]=$(run_$t); done
go run ./bench/gentree -dir "$W/src" -modify
for t in "${tools[@]}"; do change[$t]=$(run_$t); done

# The mirrors must agree with the source (hoster-env.d.ts is for the
# author's editor: sync leaves it out by design).
for t in hoster rsync; do
	dest="$W/rsync/dest"; [ $t = hoster ] && dest="$W/hoster/srv/hoster-games"
	if d=$(diff -r -x hoster-env.d.ts "$W/src" "$dest" 2>&1); then echo "$t mirror: identical"; else echo "$t mirror DIFFERS:"; echo "$d" | head -5; fi
done

printf '\norder: %s, memory warmed before first pushes: %s\n' "${tools[*]}" "$WARM"
printf '\n%s files, %s MiB, %s cores (%s)\n' "$FILES" "$MIB" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-8s %12s %12s %14s\n' tool "first push" "no-op" "1% change"
for t in "${tools[@]}"; do
	printf '%-8s %11.2fs %11.2fs %13.2fs\n' "$t" "${first[$t]}" "${noop[$t]}" "${change[$t]}"
done
