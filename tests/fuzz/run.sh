#!/usr/bin/env bash
# Runs libFuzzer targets for FUZZ_SECONDS each, FUZZ_JOBS (default: one per
# core) at a time, and prints, per target, the runs, executions per second,
# coverage and crashes; exits non-zero if any target crashed, leaked, timed
# out or ran out of memory. Called by `make fuzz` as: run.sh BUILD_DIR NAME...
#
# Each target runs over two corpora: a working one under BUILD_DIR/corpus
# (what the fuzzer finds, kept between runs, never committed) and the
# committed seeds in tests/fuzz/corpus/NAME. Per-target flags (-max_len,
# -dict, ...) come from a line " * fuzz-flags: ..." in the target's source.
# FUZZ_SECONDS=0 replays the seeds once and fuzzes nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."

dir=$1; shift
secs=${FUZZ_SECONDS:-30}
status=0 crashed=()

# Memory: a target must never need much; an input that makes one allocate
# without bound shows up as a malloc-limit or RSS-limit crash.
common=(-rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=10 -print_final_stats=1
	-detect_leaks=1)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One target's run; what it found is read from its log once all are done.
fuzz_one() { # name
	local name=$1 bin seeds work arts log flags run
	bin="$dir/tests/fuzz/fuzz_$name"
	seeds="tests/fuzz/corpus/$name"
	work="$dir/corpus/$name"
	arts="$dir/artifacts/$name"
	log="$dir/logs/$name.log"
	mkdir -p "$work" "$arts" "$(dirname "$log")" "$seeds"
	read -r -a flags < <(sed -n 's/^ \* fuzz-flags: *//p' "tests/fuzz/fuzz_$name.c" | head -n1)
	if [ "$secs" = 0 ]; then
		run=(-runs=0 "${flags[@]}" "$seeds")
	else
		run=(-max_total_time="$secs" "${flags[@]}" "$work" "$seeds")
	fi
	"$bin" "${common[@]}" -artifact_prefix="$arts/" "${run[@]}" >"$log" 2>&1
	echo $? >"$log.rc"
}

# Targets side by side, FUZZ_JOBS (one per core) at a time: each still
# fuzzes for FUZZ_SECONDS, the whole takes 1/FUZZ_JOBS of the time.
jobs=${FUZZ_JOBS:-$(nproc)}
echo "fuzz: $# target(s), $jobs at a time, $([ "$secs" = 0 ] && echo "the committed seeds replayed" || echo "$secs s each")"
running=0
for name in "$@"; do
	rm -f "$dir/logs/$name.log.rc"
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz_one "$name" &
	running=$((running + 1))
done
wait

printf '%-10s %10s %8s %7s %7s %7s  %s\n' target runs exec/s cov ft corpus result
for name in "$@"; do
	log="$dir/logs/$name.log"
	rc=$(cat "$log.rc" 2>/dev/null || echo '?')
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
	if [ "$rc" = 0 ]; then
		result=ok
	else
		result="CRASH (exit $rc): see $log"
		crashed+=("$name")
		status=1
	fi
	printf '%-10s %10s %8s %7s %7s %7s  %s\n' "$name" "${runs:-?}" "${eps:-?}" "${cov:-?}" \
		"${ft:-?}" "${corp:-?}" "$result"
done

if [ "$status" != 0 ]; then
	echo
	for name in "${crashed[@]}"; do
		echo "--- $name: $dir/logs/$name.log"
		# What the target printed last, less libFuzzer's progress lines:
		# a sanitizer report, an invariant's message, a library's panic.
		grep -vE '^#[0-9]+|^INFO: |^stat::' "$dir/logs/$name.log" | tail -n 40
		# The input, so that a crash seen only in CI can be replayed
		# (base64 -d > x; the target binary with x as its argument).
		art=$(ls -t "$dir/artifacts/$name"/* 2>/dev/null | head -n1)
		if [ -n "$art" ]; then
			echo "--- $name: input $(basename "$art"), $(stat -c %s "$art") bytes, base64:"
			head -c 12288 "$art" | base64 -w 120
		fi
	done
	echo "fuzz: ${#crashed[@]} target(s) failed: ${crashed[*]}"
fi
exit "$status"
