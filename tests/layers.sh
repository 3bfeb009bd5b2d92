#!/usr/bin/env bash
# The layer check (make test): every #include "folder/..." under src/ points
# down the layer order, and no source file is over 2,000 lines.
#
# The order is read from the table under "## Layers" in docs/ARCHITECTURE.md
# (rows "| N | folder | ... |", lowest layer first), so the document and the
# check cannot disagree. A file in folder A may include headers of A and of
# any folder of a lower layer; src/main.c stands above every folder. A folder
# the table does not name fails the check: a new folder needs its place.
#
# Prints one line per violation and ends with "layers: N passed, N failed"
# (two checks: includes, sizes); exits non-zero on any violation.
#
#   tests/layers.sh            checks this repository
#   tests/layers.sh ROOT       checks the tree at ROOT (docs/ and src/ under it)
#   tests/layers.sh --self     first checks that a made-up tree with an upward
#                              include and an oversized file fails, then this one
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --self ]; then
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	mkdir -p "$t/docs" "$t/src/low" "$t/src/high"
	printf '## Layers\n\n| 1 | low | |\n| 2 | high | |\n' > "$t/docs/ARCHITECTURE.md"
	printf '#include "high/h.h"\n' > "$t/src/low/l.c"
	seq 2001 > "$t/src/high/h.h"
	if bash "$here/layers.sh" "$t" > "$t/out" 2>&1 ||
		! grep -q 'low (layer 1) includes high (layer 2)' "$t/out" ||
		! grep -q 'h.h has 2001 lines' "$t/out"; then
		echo "layers: the check passed a tree it must refuse:"
		cat "$t/out"
		echo "layers: 0 passed, 1 failed"
		exit 1
	fi
	shift
fi
cd "${1:-$here/..}"
max_lines=2000

declare -A rank
while IFS='|' read -r _ n folder _; do
	n=${n// /} folder=${folder// /}
	[[ $n =~ ^[0-9]+$ ]] && rank[$folder]=$n
done < <(sed -n '/^## Layers/,/^## /p' docs/ARCHITECTURE.md)
if [ "${#rank[@]}" = 0 ]; then
	echo "layers: no table under '## Layers' in docs/ARCHITECTURE.md"
	echo "layers: 0 passed, 1 failed"
	exit 1
fi

bad_inc=0
for dir in src/*/; do
	from=$(basename "$dir")
	if [ -z "${rank[$from]:-}" ]; then
		echo "layers: src/$from/ has no row in docs/ARCHITECTURE.md's layer table"
		bad_inc=$((bad_inc + 1))
		continue
	fi
	while IFS=: read -r file line to; do
		if [ -z "${rank[$to]:-}" ]; then
			echo "layers: $file:$line includes $to/, which has no layer"
			bad_inc=$((bad_inc + 1))
		elif [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
			echo "layers: $file:$line: $from (layer ${rank[$from]}) includes $to (layer ${rank[$to]}), which is above it"
			bad_inc=$((bad_inc + 1))
		fi
	done < <(grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "$dir"*.[ch] 2>/dev/null |
		sed -E 's/^([^:]+):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]+"([a-z_]+)\/.*/\1:\2:\3/')
done

bad_size=0
while read -r n file; do
	[ "$file" = total ] && continue
	if [ "$n" -gt "$max_lines" ]; then
		echo "layers: $file has $n lines (at most $max_lines: split it by concern)"
		bad_size=$((bad_size + 1))
	fi
done < <(find src -name '*.[ch]' -print0 | xargs -0 wc -l)

passed=0 failed=0
[ "$bad_inc" = 0 ] && passed=$((passed + 1)) || failed=$((failed + 1))
[ "$bad_size" = 0 ] && passed=$((passed + 1)) || failed=$((failed + 1))
echo "layers: $bad_inc upward include(s), $bad_size oversized file(s)"
echo "layers: $passed passed, $failed failed"
[ "$failed" = 0 ]
