#!/usr/bin/env bash
# Compares hoster-server's game pages with Caddy's own file_server on the
# same folder, side by side on loopback, with wrk: requests per second for a
# 4 KiB file, for its 304 revalidation (If-None-Match with the server's own
# ETag), and MB/s for a 50 MB asset. Each measurement alternates the two
# servers ROUNDS times and keeps each one's best, so that neither meets
# only the machine's busy moments.
#
#   bench/pages.sh [SECONDS] [ROUNDS]      default 10 3
#
# Needs caddy and wrk (apt-get install caddy wrk); builds hoster-server.
set -euo pipefail
SECONDS_EACH=${1:-10}
ROUNDS=${2:-3}
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 2; }
command -v caddy >/dev/null || { echo "needs caddy (apt-get install caddy)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/hoster-bench-pages-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/hoster-server" ./cmd/hoster-server
games="$tmp/srv/hoster-games"
mkdir -p "$games/example.com"
cp -r examples/sites/example.com/arena "$games/example.com/arena"
mkdir -p "$games/example.com/arena/assets"
head -c 3072 /dev/urandom | base64 -w 64 | head -c 4096 > "$games/example.com/arena/assets/page4k.js"
head -c $((50 * 1000 * 1000)) /dev/urandom > "$games/example.com/arena/assets/big.bin"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hp=$(free_port); ap=$(free_port); cp=$(free_port)
"$tmp/hoster-server" serve --hosting-root "$tmp/srv" --logs-root "$tmp/logs" \
	--listen "127.0.0.1:$hp" --ask-listen "127.0.0.1:$ap" 2>"$tmp/hoster.log" &
pids+=($!)
cat > "$tmp/Caddyfile" <<CADDY
{
	admin off
	auto_https off
}
http://:$cp {
	bind 127.0.0.1
	root * $games/example.com
	file_server
}
CADDY
HOME=$tmp XDG_DATA_HOME=$tmp XDG_CONFIG_HOME=$tmp caddy run --adapter caddyfile --config "$tmp/Caddyfile" 2>"$tmp/caddy.log" &
pids+=($!)

hoster="http://127.0.0.1:$hp"
caddy="http://127.0.0.1:$cp"
for u in "$hoster" "$caddy"; do
	for _ in $(seq 100); do
		curl -sf -o /dev/null -H 'Host: example.com' "$u/arena/assets/page4k.js" && break
		sleep 0.1
	done
done
etag() { curl -sfI -H 'Host: example.com' "$1/arena/assets/page4k.js" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}'; }
hoster_etag=$(etag "$hoster"); caddy_etag=$(etag "$caddy")
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: example.com' -H "If-None-Match: $hoster_etag" "$hoster/arena/assets/page4k.js")
[ "$code" = 304 ] || { echo "hoster-server did not answer 304 ($code)" >&2; exit 1; }
code=$(curl -s -o /dev/null -w "%{http_code}" -H "Host: example.com" -H "If-None-Match: $caddy_etag" "$caddy/arena/assets/page4k.js")
[ "$code" = 304 ] || { echo "caddy did not answer 304 ($code)" >&2; exit 1; }

# run NAME URL ARGS...: prints requests/s and transfer MB/s.
run() {
	local out
	out=$(wrk -d"${SECONDS_EACH}s" "${@:2}" "$1")
	local rps tps
	rps=$(awk '/^Requests\/sec/{print $2}' <<<"$out")
	tps=$(awk '/^Transfer\/sec/{v=$2; u=substr(v,length(v)-1); n=substr(v,1,length(v)-2); if(u=="GB")n*=1024; if(u=="KB")n/=1024; if(substr(v,length(v))=="B" && u!="MB" && u!="GB" && u!="KB")n=substr(v,1,length(v)-1)/1048576; print n}' <<<"$out")
	grep -q 'Non-2xx\|Socket errors' <<<"$out" && [ "${ALLOW_NON2XX:-}" != 1 ] && { echo "errors in: $out" >&2; }
	echo "$rps $tps"
}
best() { awk -v a="$1" -v b="$2" 'BEGIN{print (a+0 > b+0) ? a : b}'; }

declare -A R
for case in small revalidate big; do
	for who in hoster caddy; do R[$case.$who.rps]=0; R[$case.$who.mbs]=0; done
done
for round in $(seq "$ROUNDS"); do
	for who in hoster caddy; do
		if [ $who = hoster ]; then base=$hoster; tag=$hoster_etag; else base=$caddy; tag=$caddy_etag; fi
		read -r rps mbs < <(run "$base/arena/assets/page4k.js" -t2 -c64 -H 'Host: example.com')
		R[small.$who.rps]=$(best "${R[small.$who.rps]}" "$rps")
		read -r rps mbs < <(ALLOW_NON2XX=1 run "$base/arena/assets/page4k.js" -t2 -c64 -H 'Host: example.com' -H "If-None-Match: $tag")
		R[revalidate.$who.rps]=$(best "${R[revalidate.$who.rps]}" "$rps")
		read -r rps mbs < <(run "$base/arena/assets/big.bin" -t1 -c4 -H 'Host: example.com')
		R[big.$who.mbs]=$(best "${R[big.$who.mbs]}" "$mbs")
		echo "round $round $who: 4 KiB ${R[small.$who.rps]} req/s, 304 ${R[revalidate.$who.rps]} req/s, 50 MB ${R[big.$who.mbs]} MiB/s (best so far)" >&2
	done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
echo
echo "| | hoster-server | caddy file_server | ratio |"
echo "|---|---|---|---|"
echo "| 4 KiB file, req/s | ${R[small.hoster.rps]} | ${R[small.caddy.rps]} | $(ratio "${R[small.hoster.rps]}" "${R[small.caddy.rps]}") |"
echo "| 304 revalidation, req/s | ${R[revalidate.hoster.rps]} | ${R[revalidate.caddy.rps]} | $(ratio "${R[revalidate.hoster.rps]}" "${R[revalidate.caddy.rps]}") |"
echo "| 50 MB asset, MiB/s | ${R[big.hoster.mbs]} | ${R[big.caddy.mbs]} | $(ratio "${R[big.hoster.mbs]}" "${R[big.caddy.mbs]}") |"
echo
echo "caddy $(caddy version | cut -d' ' -f1), wrk $(wrk -v 2>&1 | head -1 | cut -d' ' -f2), $(nproc) cores, ${SECONDS_EACH}s per run, best of $ROUNDS"
