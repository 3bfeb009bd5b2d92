#!/usr/bin/env bash
# Runs every test suite and ends with one line "N passed, N failed" summing
# them all; exits non-zero if anything failed. Called by `make test` with
# SLUICE, CATALOG and UNIT set to the built binaries.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0 failed=0 status=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# C unit tests: the binary's last line is "unit: N passed, N failed".
echo "== unit tests"
"$UNIT" | tee "$out"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
read -r p f < <(sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -n1)
if [ -z "${p:-}" ]; then echo "unit tests printed no summary"; status=1; p=0; f=1; fi
passed=$((passed + p)) failed=$((failed + f))

# End-to-end tests with the official MCP SDK (Node's test runner, TAP).
echo "== end-to-end tests"
export SLUICE CATALOG
export EVERYTHING="$PWD/node_modules/.bin/mcp-server-everything"
node --test --test-reporter=tap --test-concurrency=2 tests/e2e/ 2>&1 | tee "$out" |
	grep -E '^(not ok|ok|# (pass|fail|tests))|^ +(not ok|ok) ' | grep -v '# SKIP' || true
[ "${PIPESTATUS[0]}" = 0 ] || status=1
p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out" | tail -n1)
f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out" | tail -n1)
if [ -z "$p" ] || [ -z "$f" ]; then
	echo "end-to-end tests printed no summary:"; tail -n 40 "$out"; status=1; p=0; f=1
elif [ "$f" != 0 ]; then
	echo "--- failures:"; grep -B2 -A30 '^\s*not ok' "$out" | head -n 200
fi
passed=$((passed + p)) failed=$((failed + f))

echo
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$status" = 0 ]
