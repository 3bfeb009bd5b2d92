#!/usr/bin/env bash
# Runs every test suite and ends with one line "N passed, N failed" summing
# them all; exits non-zero if anything failed. Called by `make test` with
# SLUICE, CATALOG and UNIT set to the built binaries.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0 failed=0 status=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# Sanitizer builds (make test SAN=...): every sanitized process (the unit
# tests, the gateway, its workers, the catalog upstream) writes its reports
# to files here, LeakSanitizer included, so that a leak at exit or undefined
# behaviour in a process whose stderr a test never reads still fails the run.
sanlogs=
if [ -n "${SAN:-}" ]; then
	sanlogs="$PWD/build/san/reports"
	rm -rf "$sanlogs" && mkdir -p "$sanlogs"
	export ASAN_OPTIONS="detect_leaks=1:log_path=$sanlogs/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
	export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$sanlogs/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
	export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
fi

# The layers (tests/layers.sh): every include points down the folder order of
# docs/ARCHITECTURE.md, and no source file is over 2,000 lines.
echo "== layers"
bash tests/layers.sh --self | tee "$out"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
read -r p f < <(sed -n 's/^layers: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -n1)
if [ -z "${p:-}" ]; then echo "the layer check printed no summary"; status=1; p=0; f=1; fi
passed=$((passed + p)) failed=$((failed + f))

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
# Four files at a time: most of a file's time is spent waiting (for a
# timeout, a child, a server), so the plain build keeps 2 cores busy with 4
# (3.6 minutes against 5.4 with 2, every test passing). Sanitized processes
# are CPU-bound and several times heavier: three at a time there (the whole
# sanitized run in 8.4 minutes, 1.7 cores busy, every test passing).
conc=${E2E_CONCURRENCY:-$([ -n "${SAN:-}" ] && echo 3 || echo 4)}
# A test that hangs is cancelled after 10 minutes (the slowest takes about one)
# and counted as failed, rather than holding the run until CI's limit.
node --test --test-reporter=tap --test-concurrency="$conc" --test-timeout=600000 tests/e2e/ 2>&1 | tee "$out" |
	grep -E '^(not ok|ok|# (pass|fail|tests))|^ +(not ok|ok) ' | grep -v '# SKIP' || true
[ "${PIPESTATUS[0]}" = 0 ] || status=1
p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out" | tail -n1)
f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out" | tail -n1)
c=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$out" | tail -n1)
[ -n "$f" ] && f=$((f + ${c:-0}))
if [ -z "$p" ] || [ -z "$f" ]; then
	echo "end-to-end tests printed no summary:"; tail -n 40 "$out"; status=1; p=0; f=1
elif [ "$f" != 0 ]; then
	echo "--- failures:"; grep -B2 -A30 '^\s*not ok' "$out" | head -n 200
fi
passed=$((passed + p)) failed=$((failed + f))

if [ -n "$sanlogs" ]; then
	echo "== sanitizer reports"
	reports=$(find "$sanlogs" -type f | sort)
	if [ -n "$reports" ]; then
		for r in $reports; do echo "--- $r"; head -n 60 "$r"; done
		echo "sanitizer reports: $(echo "$reports" | wc -l) process(es) reported errors or leaks"
		failed=$((failed + 1)) status=1
	else
		echo "none: no leak, no undefined behaviour, no memory error"
		passed=$((passed + 1))
	fi
fi

echo
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$status" = 0 ]
