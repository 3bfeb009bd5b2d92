#!/usr/bin/env bash
# make bench: the gateway's overhead on a small tools/call, its idle memory
# and its size, measured in one run on this machine. Numbers, not pass/fail.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${BENCH_CALLS:-3000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cc -O2 -o "$tmp/callbench" bench/callbench.c
cc -O2 -o "$tmp/spawnbench" bench/spawnbench.c
# Linked against the gateway's library like the unit tests, with the Makefile's libraries.
ldlibs=$(sed -n 's/^LDLIBS *:= *//p' Makefile)
cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -Ibuild/third_party/yyjson/src -Ibuild/third_party/quickjs-ng \
	-o "$tmp/redact" bench/redact.c build/libsluice.a $ldlibs
cat > "$tmp/bench.json" <<JSON
{"mcpServers": {"github": {"command": "$CATALOG", "args": ["--backend", "github"]}},
 "sluice": {"logLevel": "warn", "audit": {"file": "/dev/null"}}}
JSON
cat > "$tmp/code.json" <<JSON
{"mcpServers": {"github": {"command": "$CATALOG", "args": ["--backend", "github"]}},
 "sluice": {"logLevel": "warn", "exposure": "router", "codeMode": {"enabled": true},
            "audit": {"file": "/dev/null"}}}
JSON

echo "machine: $(nproc) cores, $(uname -sr), $(date -u +%Y-%m-%d)"
echo
echo "small tools/call (echo), $n sequential calls over stdio, microseconds."
echo "Each path runs twice: all processes on one core (taskset -c 0: no cross-core"
echo "wake-ups, which cost tens of microseconds in this VM) and unpinned."
printf '| %-22s | %-8s | %8s | %8s | %9s |\n' path cores p50 p99 calls/s
printf '|%s|%s|%s|%s|%s|\n' ------------------------ ---------- ---------- ---------- -----------
row() { # label cores-label tool cmd...
	local label=$1 cl=$2 tool=$3; shift 3
	local pin=()
	[ "$cl" = "one" ] && pin=(taskset -c 0)
	read -r p50 p99 rate < <("${pin[@]}" "$tmp/callbench" -n "$n" -t "$tool" -- "$@")
	printf '| %-22s | %-8s | %8s | %8s | %9s |\n' "$label" "$cl" "$p50" "$p99" "$rate"
	eval "${label// /_}_$cl=$p50"
}
row "direct to upstream" one echo "$CATALOG" --backend github
row "through sluice" one github__echo "$SLUICE" serve --config "$tmp/bench.json"
row "direct to upstream" any echo "$CATALOG" --backend github
row "through sluice" any github__echo "$SLUICE" serve --config "$tmp/bench.json"
echo
awk -v a="$through_sluice_one" -v b="$direct_to_upstream_one" \
	'BEGIN { printf "gateway overhead p50 on one core: %.1f us (goal: at most 50 us)\n", a - b }'
awk -v a="$through_sluice_any" -v b="$direct_to_upstream_any" \
	'BEGIN { printf "gateway overhead p50 unpinned: %.1f us\n", a - b }'

echo
echo "code mode: execute_code(\"return 1\") at the gateway, a small invoke_tool, and fork+exec"
echo "of /bin/true, microseconds. 'back to back': the next call as soon as the answer is in;"
echo "'paced': 2 ms between calls (the pool refills, but caches cool in between)."
printf '| %-34s | %8s | %8s | %10s |\n' what p50 p99 calls/s
printf '|%s|%s|%s|%s|\n' ------------------------------------ ---------- ---------- ------------
read -r p50 p99 rate < <("$tmp/callbench" -n "$n" -t execute_code -a '{"code":"return 1"}' -- "$SLUICE" serve --config "$tmp/code.json")
printf '| %-34s | %8s | %8s | %10s |\n' "execute_code, back to back" "$p50" "$p99" "$rate"
floor=$p50
read -r p50 p99 rate < <("$tmp/callbench" -n 1000 -p 2000 -t execute_code -a '{"code":"return 1"}' -- "$SLUICE" serve --config "$tmp/code.json")
printf '| %-34s | %8s | %8s | %10s |\n' "execute_code, paced" "$p50" "$p99" "-"
read -r p50 p99 rate < <("$tmp/callbench" -n "$n" -t invoke_tool -a '{"server":"github","tool":"echo","arguments":{"m":"hi"}}' -- "$SLUICE" serve --config "$tmp/code.json")
printf '| %-34s | %8s | %8s | %10s |\n' "invoke_tool (small), back to back" "$p50" "$p99" "$rate"
read -r p50 p99 < <("$tmp/spawnbench" -n 1000 /bin/true)
printf '| %-34s | %8s | %8s | %10s |\n' "fork+exec+wait of /bin/true" "$p50" "$p99" "-"
awk -v f="$floor" -v s="$p50" 'BEGIN { printf "\nsandbox floor p50 %.0f us = %.2fx fork+exec of /bin/true (goals: at most 250 us; never above 1 ms or 2x)\n", f, f / s }'

# Idle RSS: a gateway with its upstream up, after the handshake, doing nothing.
mkfifo "$tmp/in"
"$SLUICE" serve --config "$tmp/bench.json" < "$tmp/in" > "$tmp/out" 2>/dev/null &
pid=$!
exec 3> "$tmp/in"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&3
for _ in $(seq 50); do grep -q '"id":2' "$tmp/out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
anon=$(awk '/^Anonymous:/ {print $2}' "/proc/$pid/smaps_rollup")
exec 3>&-
wait "$pid" || true
echo "idle RSS: $rss KiB, of which private (anonymous) $anon KiB; the rest is shared library and binary text (goal: at most 4096 KiB)"

strip -o "$tmp/sluice.stripped" "$SLUICE"
size=$(stat -c %s "$tmp/sluice.stripped")
engine=$(size -t build/obj/third_party/quickjs-ng/*.o | awk 'END { print $1 + $2 }')
echo "stripped binary: $size bytes, of which the JS engine (code and data of quickjs-ng) $engine bytes"
echo "(goals: at most 2 MiB before the engine; the engine adds at most 2 MiB)"

echo
echo "redaction engine: sl_redact_text with every built-in pattern, 1 MB tool results:"
"$tmp/redact" -n 10
echo && bash bench/http.sh
