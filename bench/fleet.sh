#!/usr/bin/env bash
# A sync's run time against a three-node fleet (NATS embedded, on loopback)
# beside the same sync against a lone server, in one run: first push, no-op,
# and 1% modified + 1% deleted. The goal is a fleet at most 1.3x the lone
# server. The sync goes through node A; the fleet's time is the client's,
# until the fleet has published every change. The other nodes write a sync
# once it has ended: how long after the first push they hold it is shown
# (each next sync starts then), and every node's files are checked below.
#
#   bench/fleet.sh [FILES MIB]       default 2000 200
#   CPU=1 bench/fleet.sh             where the CPU went in each first push
#   FS=0 bench/fleet.sh              the servers' folders in /tmp, not on a
#                                    fresh ext4 (bench/lib.sh's bench_fs)
#
# Builds hoster and hoster-server itself; needs curl.
set -euo pipefail
FILES=${1:-2000}
MIB=${2:-200}
cd "$(dirname "$0")/.."
go build -o bin/hoster ./cmd/hoster
go build -o bin/hoster-server ./cmd/hoster-server
NAME=bench-fleet
FS=${FS:-1}
. bench/lib.sh
W=$(mktemp -d /tmp/hoster-bench-fleet.XXXXXX)
pids=()
trap bench_cleanup EXIT
bench_fs 8G   # the servers' folders (FS=0: in W)

go run ./bench/gentree -dir "$W/src" -files "$FILES" -mib "$MIB"
bin/hoster gen "$W/src" >/dev/null
token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# serve NAME PORT [FLAGS...]: a hoster-server on 127.0.0.1:PORT.
serve() {
	local name=$1 port=$2; shift 2
	mkdir -p "$D/$name/srv" "$W/$name"
	printf '%s' "$token" > "$D/$name/srv/hoster-token"
	bin/hoster-server serve --isolation none --hosting-root "$D/$name/srv" --logs-root "$D/$name/logs" \
		--listen 127.0.0.1:$port --ask-listen 127.0.0.1:$((port + 1)) "$@" >"$W/$name/server.log" 2>&1 &
	pids+=($!)
	printf '{"hoster-config-server": "http://127.0.0.1:%s", "hoster-config-apiToken": "%s"}' "$port" "$token" > "$W/$name/hoster.json"
}
serve lone 18800
routes=(127.0.0.1:18911 127.0.0.1:18913 127.0.0.1:18915)   # each node's relay on its route's port + 1
for i in 0 1 2; do
	peers=$(printf '%s\n' "${routes[@]}" | grep -v "${routes[$i]}" | paste -sd,)
	serve node$i $((18810 + 2 * i)) --cluster-listen "${routes[$i]}" --cluster-peers "$peers" --cluster-node node$i
done
for port in 18800 18810 18812 18814; do   # a fleet node answers once a majority is up
	for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:$port/api/version && break; sleep 0.1; done
done

now() { date +%s.%N; }
timeit() { local s e; s=$(now); "$@" >"$W/last.out" 2>&1 || { echo "failed: $*" >&2; cat "$W/last.out" >&2; return 1; }; e=$(now); echo "$e - $s" | bc; }
run_lone()  { timeit bin/hoster --config "$W/lone/hoster.json" -q sync "$W/src"; }
run_fleet() { timeit bin/hoster --config "$W/node0/hoster.json" -q sync "$W/src"; }

# held NODE: NODE's games hold every file of the source, each of its size.
sizes() { (cd "$1" 2>/dev/null && find . -type f ! -name hoster-env.d.ts -printf '%P %s\n' | sort); }
held() { [ "$(sizes "$D/$1/srv/hoster-games")" = "$want" ]; }

# cpus: each process's CPU-seconds so far (bench/lib.sh's cpu).
cpus() { printf 'client=%s lone=%s A=%s B=%s C=%s' "$(cpu $$)" "$(cpu "${pids[0]}")" "$(cpu "${pids[1]}")" "$(cpu "${pids[2]}")" "$(cpu "${pids[3]}")"; }

declare -A first noop change
for t in lone fleet; do
	[ "${CPU:-0}" = 1 ] && before=$(cpus)
	first[$t]=$(run_$t)
	[ "${CPU:-0}" = 1 ] && echo "$t first push: CPU-s before: $before after: $(cpus)" >&2
done
want=$(sizes "$W/src") s=$(now)
for _ in $(seq 1200); do held node1 && held node2 && break; sleep 0.05; done
caught=$(echo "$(now) - $s" | bc)
for t in lone fleet; do noop[$t]=$(run_$t); done
go run ./bench/gentree -dir "$W/src" -modify
for t in lone fleet; do change[$t]=$(run_$t); done

# Every node must hold what the lone server holds (the others within
# moments of the sync's end).
sleep 2
for dest in lone node0 node1 node2; do
	if d=$(diff -r -x hoster-env.d.ts "$W/src" "$D/$dest/srv/hoster-games" 2>&1); then echo "$dest: identical"; else echo "$dest DIFFERS:"; echo "$d" | head -5; fi
done

printf '\n%s files, %s MiB, %s cores (%s), fresh ext4: %s, load average %s\n' "$FILES" "$MIB" "$(nproc)" \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$FS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %12s %12s %12s\n' target "first push" "no-op" "1% change"
printf '%-14s %11.2fs %11.2fs %11.2fs\n' "lone server" "${first[lone]}" "${noop[lone]}" "${change[lone]}"
printf '%-14s %11.2fs %11.2fs %11.2fs\n' "3-node fleet" "${first[fleet]}" "${noop[fleet]}" "${change[fleet]}"
printf '%-14s %11.2fx %11.2fx %11.2fx\n' "fleet / lone" \
	"$(echo "${first[fleet]} / ${first[lone]}" | bc -l)" "$(echo "${noop[fleet]} / ${noop[lone]}" | bc -l)" \
	"$(echo "${change[fleet]} / ${change[lone]}" | bc -l)"
printf 'nodes B and C held the first push %.2fs after it ended\n' "$caught"
