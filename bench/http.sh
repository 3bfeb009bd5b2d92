#!/usr/bin/env bash
# make bench, HTTP part: a small tools/call (echo of the test catalog, github
# backend) over MCP Streamable HTTP at 8 concurrent clients, each its own
# session on its own keep-alive connection (bench/httpbench.c, libcurl), through
# sluice and through two other proxies in front of the same stdio upstream:
# mcp-proxy and supergateway --stateful (npm, pinned in package.json). One
# server runs at a time. Numbers, not pass/fail.
#
#   SLUICE=build/sluice CATALOG=build/tests/catalog bash bench/http.sh
#   BENCH_HTTP_CALLS (per client, default 1000), BENCH_HTTP_CLIENTS (8)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${BENCH_HTTP_CALLS:-1000}
clients=${BENCH_HTTP_CLIENTS:-8}
bin=node_modules/.bin
tmp=$(mktemp -d)
pid=
stop() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	fi
}
trap 'stop; rm -rf "$tmp"' EXIT

cc -O2 -o "$tmp/httpbench" bench/httpbench.c $(pkg-config --libs libcurl 2>/dev/null || echo -lcurl)
cat > "$tmp/sluice.json" <<JSON
{"mcpServers": {"github": {"command": "$CATALOG", "args": ["--backend", "github"]}},
 "sluice": {"audit": {"file": "/dev/null"}}}
JSON

# A port nothing listens on (bash's /dev/tcp: no connection, no listener).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

# Waits until an initialize over HTTP answers 200 (at most 30 s).
wait_ready() {
	local url=$1
	for _ in $(seq 300); do
		if curl -s -o /dev/null -w '%{http_code}' "$url" -H 'Content-Type: application/json' \
			-H 'Accept: application/json, text/event-stream' \
			-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ready","version":"1"}}}' \
			2>/dev/null | grep -q 200; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { echo "server exited: $(tail -n 5 "$tmp/log")" >&2; return 1; }
		sleep 0.1
	done
	echo "server not ready: $(tail -n 5 "$tmp/log")" >&2
	return 1
}

# bench NAME TOOL URL: runs httpbench against the server started just before.
declare -A p50 p99 rate
bench() {
	local name=$1 tool=$2 url=$3
	wait_ready "$url"
	read -r p50["$name"] p99["$name"] rate["$name"] < <("$tmp/httpbench" -u "$url" -c "$clients" -n "$n" -w 100 -t "$tool")
	stop
}

port=$(free_port)
"$SLUICE" serve --http "127.0.0.1:$port" --config "$tmp/sluice.json" > "$tmp/log" 2>&1 &
pid=$!
bench sluice github__echo "http://127.0.0.1:$port/mcp"

port=$(free_port)
"$bin/mcp-proxy" --host 127.0.0.1 --port "$port" --server stream -- "$CATALOG" --backend github > "$tmp/log" 2>&1 &
pid=$!
bench mcp-proxy echo "http://127.0.0.1:$port/mcp"

port=$(free_port)
"$bin/supergateway" --stdio "$CATALOG --backend github" --outputTransport streamableHttp --stateful \
	--port "$port" --logLevel none > "$tmp/log" 2>&1 &
pid=$!
bench "supergateway --stateful" echo "http://127.0.0.1:$port/mcp"

# The fastest competitor: the most calls per second; the p50 goal is against
# the lowest p50 of either.
best=mcp-proxy
awk -v a="${rate[supergateway --stateful]}" -v b="${rate[mcp-proxy]}" 'BEGIN { exit !(a > b) }' &&
	best="supergateway --stateful"
bestp50=$(printf '%s\n' "${p50[mcp-proxy]}" "${p50[supergateway --stateful]}" | sort -n | head -n1)

echo
echo "small tools/call over Streamable HTTP, $clients concurrent clients (one session and one"
echo "keep-alive connection each), $n calls per client after 100 warm-up calls, microseconds;"
echo "every proxy in front of the same stdio upstream ($CATALOG --backend github)."
printf '| %-24s | %8s | %8s | %9s | %-24s | %-18s |\n' server p50 p99 calls/s "calls/s vs fastest other" "p50 vs best other"
printf '|%s|%s|%s|%s|%s|%s|\n' -------------------------- ---------- ---------- ----------- -------------------------- --------------------
for s in sluice mcp-proxy "supergateway --stateful"; do
	r=$(awk -v a="${rate[$s]}" -v b="${rate[$best]}" 'BEGIN { printf "%.2fx", a / b }')
	q=$(awk -v a="${p50[$s]}" -v b="$bestp50" 'BEGIN { printf "%.2fx", a / b }')
	printf '| %-24s | %8s | %8s | %9s | %-24s | %-18s |\n' "$s" "${p50[$s]}" "${p99[$s]}" "${rate[$s]}" "$r" "$q"
done
awk -v r="${rate[sluice]}" -v b="${rate[$best]}" -v p="${p50[sluice]}" -v q="$bestp50" 'BEGIN {
	printf "\nsluice: %.1fx the calls/s of the fastest other (goal: at least 5x), p50 %.2f of the best other (goal: at most 0.20)\n", r / b, p / q }'
