#!/usr/bin/env bash
# make bench, HTTP part: a small tools/call (echo of the test catalog, github
# backend) over MCP Streamable HTTP at 8 concurrent clients, each its own
# session on its own keep-alive connection (bench/httpbench.c, libcurl), through
# sluice and through two other proxies in front of the same stdio upstream:
# mcp-proxy and supergateway --stateful (npm, pinned in package.json). One
# server runs at a time, in three rounds (each server's median round counts).
# Numbers, not pass/fail. Then sluice itself twice more, as a shared gateway
# is run: plain HTTP with a static bearer token,
# and HTTPS (sluice.http.tls, a certificate of a CA made here) with an
# OAuth JWT access token checked against a key set (bench/jwt.mjs stands in
# for the authorization server).
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

# Waits until an initialize over HTTP answers 200 (at most 30 s); HEADER
# (a credential) and CA (for https) when given.
wait_ready() {
	local url=$1 hdr=${2:-} ca=${3:-}
	for _ in $(seq 300); do
		if curl -s ${ca:+--cacert "$ca"} -o /dev/null -w '%{http_code}' "$url" ${hdr:+-H "$hdr"} \
			-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
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

# bench NAME TOOL URL: runs httpbench against the server started just before;
# appends "calls/s p50 p99" to NAME's rounds.
declare -A p50 p99 rate rounds
bench() {
	local name=$1 tool=$2 url=$3 a b c
	wait_ready "$url"
	read -r a b c < <("$tmp/httpbench" -u "$url" -c "$clients" -n "$n" -w 100 -t "$tool")
	rounds["$name"]+="$c $a $b"$'\n'
	stop
}

# Three rounds, the three servers in turn in each, so that a slower or
# faster minute of the machine falls on all of them; each server's row is
# its median round by calls/s.
for _ in 1 2 3; do
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
done
for s in sluice mcp-proxy "supergateway --stateful"; do
	read -r rate["$s"] p50["$s"] p99["$s"] < <(printf '%s' "${rounds[$s]}" | sort -n | sed -n 2p)
done

# sluice as a team's gateway: a static token over HTTP and over HTTPS, then
# a JWT over HTTPS (the token's first check verifies its signature; later
# requests find its verdict remembered, docs/internals/AUTH.md). The HTTPS
# pair isolates what the JWT costs from what TLS costs.
# front NAME HTTP_JSON URL HEADER [CA]: sluice with that sluice.http, measured.
front() {
	local name=$1 http=$2 url=$3 hdr=$4 ca=${5:-}
	cat > "$tmp/front.json" <<JSON
{"mcpServers": {"github": {"command": "$CATALOG", "args": ["--backend", "github"]}},
 "sluice": {"audit": {"file": "/dev/null"}, "http": $http}}
JSON
	"$SLUICE" serve --http "127.0.0.1:$port" --config "$tmp/front.json" > "$tmp/log" 2>&1 &
	pid=$!
	wait_ready "$url" "$hdr" "$ca"
	read -r p50["$name"] p99["$name"] rate["$name"] < <("$tmp/httpbench" -u "$url" -c "$clients" \
		-n "$n" -w 100 -t github__echo -H "$hdr" ${ca:+-C "$ca"})
	stop
}

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca -keyout "$tmp/ca.key" \
	-out "$tmp/ca.pem" -addext basicConstraints=critical,CA:TRUE 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$tmp/srv.key" -out "$tmp/srv.csr" 2>/dev/null
openssl x509 -req -in "$tmp/srv.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial -days 1 \
	-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost') -out "$tmp/srv.pem" 2>/dev/null
tls="\"tls\": {\"certFile\": \"$tmp/srv.pem\", \"keyFile\": \"$tmp/srv.key\"}"
static='"bearerToken": "bench-static-token"'

port=$(free_port)
front "HTTP + static token" "{$static}" "http://127.0.0.1:$port/mcp" \
	"Authorization: Bearer bench-static-token"
port=$(free_port)
front "HTTPS + static token" "{$static, $tls}" "https://127.0.0.1:$port/mcp" \
	"Authorization: Bearer bench-static-token" "$tmp/ca.pem"
port=$(free_port)
resource="https://127.0.0.1:$port/mcp"
node bench/jwt.mjs "$resource" > "$tmp/as" &
as_pid=$!
for _ in $(seq 100); do [ -s "$tmp/as" ] && break; sleep 0.05; done
read -r as_port jwt < "$tmp/as"
front "HTTPS + JWT" "{$tls, \"auth\": {\"resource\": \"$resource\",
	\"authorizationServers\": [\"http://127.0.0.1:$as_port\"], \"jwksUri\": \"http://127.0.0.1:$as_port/jwks\"}}" \
	"$resource" "Authorization: Bearer $jwt" "$tmp/ca.pem"
kill "$as_pid" 2>/dev/null || true
wait "$as_pid" 2>/dev/null || true

# The fastest competitor: the most calls per second; the p50 goal is against
# the lowest p50 of either.
best=mcp-proxy
awk -v a="${rate[supergateway --stateful]}" -v b="${rate[mcp-proxy]}" 'BEGIN { exit !(a > b) }' &&
	best="supergateway --stateful"
bestp50=$(printf '%s\n' "${p50[mcp-proxy]}" "${p50[supergateway --stateful]}" | sort -n | head -n1)

echo
echo "small tools/call over Streamable HTTP, $clients concurrent clients (one session and one"
echo "keep-alive connection each), $n calls per client after 100 warm-up calls, microseconds;"
echo "every proxy in front of the same stdio upstream ($CATALOG --backend github); three rounds"
echo "of the three in turn, each row its server's median round by calls/s."
printf '| %-24s | %8s | %8s | %9s | %-24s | %-18s |\n' server p50 p99 calls/s "calls/s vs fastest other" "p50 vs best other"
printf '|%s|%s|%s|%s|%s|%s|\n' -------------------------- ---------- ---------- ----------- -------------------------- --------------------
for s in sluice mcp-proxy "supergateway --stateful"; do
	r=$(awk -v a="${rate[$s]}" -v b="${rate[$best]}" 'BEGIN { printf "%.2fx", a / b }')
	q=$(awk -v a="${p50[$s]}" -v b="$bestp50" 'BEGIN { printf "%.2fx", a / b }')
	printf '| %-24s | %8s | %8s | %9s | %-24s | %-18s |\n' "$s" "${p50[$s]}" "${p99[$s]}" "${rate[$s]}" "$r" "$q"
done
awk -v r="${rate[sluice]}" -v b="${rate[$best]}" -v p="${p50[sluice]}" -v q="$bestp50" 'BEGIN {
	printf "\nsluice: %.1fx the calls/s of the fastest other (goal: at least 10x), p50 %.2f of the best other (goal: at most 0.10)\n", r / b, p / q }'

echo
echo "sluice as a shared gateway, same call and clients: a static bearer token over HTTP and"
echo "HTTPS, and an OAuth JWT access token (RS256, checked against the issuer's key set) over HTTPS."
printf '| %-28s | %8s | %8s | %9s |\n' "front end" p50 p99 calls/s
printf '|%s|%s|%s|%s|\n' ------------------------------ ---------- ---------- -----------
for f in "HTTP + static token" "HTTPS + static token" "HTTPS + JWT"; do
	printf '| %-28s | %8s | %8s | %9s |\n' "$f" "${p50[$f]}" "${p99[$f]}" "${rate[$f]}"
done
awk -v j="${p50[HTTPS + JWT]}" -v t="${p50[HTTPS + static token]}" -v h="${p50[HTTP + static token]}" 'BEGIN {
	printf "\nthe JWT adds %d us to the p50 over the static token, both over HTTPS (goal: under 20 us); TLS adds %d us\n", j - t, t - h }'
