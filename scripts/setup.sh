#!/usr/bin/env bash
# Installs what sluice needs to build and test, and nothing twice:
#   1. Debian packages from scripts/deps/debian-packages (as root, or via sudo);
#   2. pinned test dependencies from package-lock.json (npm ci), and the
#      build-time TypeScript stripper (sucrase, esbuild) from
#      scripts/deps/stripper/package-lock.json into build/stripper;
#   3. third-party C sources (yyjson, quickjs-ng) from Debian source packages,
#      pinned by version and SHA-256 in scripts/deps/pins, fetched through a
#      private apt sources list under build/deps (the system's apt
#      configuration is never touched).
# A second run finds everything in place and does nothing.
# `setup.sh build` skips the test dependencies (what building the gateway
# alone needs); `setup.sh stripper` installs only the stripper's packages.
set -euo pipefail
only_build=0
[ "${1:-}" = build ] && only_build=1

top=$(cd "$(dirname "$0")/.." && pwd)
deps="$top/build/deps"
tp="$top/build/third_party"

die() { printf 'setup: %s\n' "$*" >&2; exit 1; }
note() { printf 'setup: %s\n' "$*" >&2; }

# One run at a time (make -j starts the setup target and the build's stamps
# together; apt's lock and npm ci's tree are not to be shared): a second run
# waits here, then finds everything in place.
mkdir -p "$top/build"
exec 9>"$top/build/.setup.lock"
flock 9 || die "cannot lock build/.setup.lock"

# A person may be waiting (make run, make test on a fresh machine): each
# step says what it is before it starts, and what it found.
nsteps=3
step() { printf 'setup: step %s/%s: %s\n' "$1" "$nsteps" "$2" >&2; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else die "need root to run '$*': run this as root or install sudo"
	fi
}

# 1. Debian packages ---------------------------------------------------------
step 1 "Debian packages (scripts/deps/debian-packages)"
missing=()
while read -r pkg; do
	case "$pkg" in ''|'#'*) continue ;; esac
	if [ "$pkg" = nodejs ]; then
		# Building needs it too: the stripper is bundled by Node at build time.
		# Any Node.js >= 18 with npm will do (the machine may ship its own).
		command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && continue
		missing+=(nodejs npm)
		continue
	fi
	if [ "$pkg" = kubernetes-client ]; then
		# tests/e2e/kubernetes renders deploy/kubernetes with `kubectl kustomize`:
		# any kubectl will do, and another one (a cloud SDK's) would conflict.
		command -v kubectl >/dev/null 2>&1 && continue
	fi
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$pkg")
done < "$top/scripts/deps/debian-packages"

if [ "${#missing[@]}" -gt 0 ]; then
	note "installing Debian packages: ${missing[*]}"
	command -v apt-get >/dev/null 2>&1 ||
		die "apt-get not found: install ${missing[*]} with your package manager"
	as_root apt-get update -qq ||
		die "apt-get update failed: check the network or the apt sources"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed"
else
	note "all present"
fi

# 2. npm packages ------------------------------------------------------------
# The stripper's own small tree, apart from the test dependencies: building
# the gateway needs only these two packages.
stripper_deps() {
	local dir="$top/build/stripper" src="$top/scripts/deps/stripper"
	if [ -f "$dir/node_modules/.package-lock.json" ] &&
		[ ! "$src/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
		return 0
	fi
	command -v npm >/dev/null 2>&1 || die "npm not found: building needs Node.js and npm (apt-get install nodejs npm)"
	note "installing the TypeScript stripper's pinned npm packages (build/stripper)"
	npm_done=1
	mkdir -p "$dir"
	cp "$src/package.json" "$src/package-lock.json" "$dir/"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
		die "npm ci in build/stripper failed: the npm registry must be reachable"
}
if [ "${1:-}" = stripper ]; then
	stripper_deps
	exit 0
fi
step 2 "npm packages (the stripper$([ "$only_build" = 0 ] && echo ', the tests'\'' pinned dependencies'))"
npm_done=0
stripper_deps

if [ "$only_build" = 0 ] && [ -f "$top/package-lock.json" ]; then
	stamp="$top/node_modules/.package-lock.json"
	if [ -L "$top/node_modules" ]; then
		# A worktree sharing another tree's packages: npm ci would empty
		# the tree it links to, under whoever is using it.
		note "node_modules links to $(readlink "$top/node_modules"): left as it is"
		npm_done=1
	elif [ ! -f "$stamp" ] || [ "$top/package-lock.json" -nt "$stamp" ]; then
		note "installing pinned npm packages (npm ci)"
		(cd "$top" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
			die "npm ci failed: the npm registry must be reachable"
		npm_done=1
	fi
fi
[ "$npm_done" = 1 ] || note "all present"

# 3. third-party sources -----------------------------------------------------
# The mirror is whatever this machine's apt already uses for Debian.
mirror() {
	if [ -n "${SLUICE_DEBIAN_MIRROR:-}" ]; then echo "$SLUICE_DEBIAN_MIRROR"; return; fi
	local f u
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		u=$(awk '/^URIs:/ {print $2}' "$f" | grep -v security | head -n1)
		[ -n "$u" ] && { echo "$u"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		u=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' "$f")
		[ -n "$u" ] && { echo "$u"; return; }
	done
}

apt_opts=()
apt_init() {
	[ "${#apt_opts[@]}" -gt 0 ] && return 0
	local m key=/usr/share/keyrings/debian-archive-keyring.gpg
	m=$(mirror)
	[ -n "$m" ] || die "no Debian mirror found in /etc/apt: set SLUICE_DEBIAN_MIRROR to one"
	[ -f "$key" ] || die "missing $key: apt-get install debian-archive-keyring"
	mkdir -p "$deps/apt/lists/partial" "$deps/apt/cache/archives/partial" "$deps/apt/preferences.d"
	sed -e "s|@MIRROR@|$m|g" -e "s|@KEYRING@|$key|g" \
		"$top/scripts/deps/sources.list.in" > "$deps/apt/sources.list"
	apt_opts=(-o "Dir::Etc::sourcelist=$deps/apt/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$deps/apt/lists" -o "Dir::Cache=$deps/apt/cache"
		-o "Dir::Etc::preferencesparts=$deps/apt/preferences.d" -o APT::Sandbox::User=root
		-o Debug::NoLocking=1)
	note "reading Debian source indexes from $m"
	apt-get "${apt_opts[@]}" update -qq >/dev/null 2>&1 ||
		die "cannot read Debian source indexes from $m: check the network"
}

fetch_source() { # name
	local name=$1 v file sum got dir
	dir="$tp/$name"
	if [ -f "$dir/.pinned" ]; then return 0; fi
	mkdir -p "$deps/dl"
	while read -r n v file sum; do
		[ "$n" = "$name" ] || continue
		if [ ! -f "$deps/dl/$file" ]; then
			# The archive sometimes serves the orig tarball but not the .dsc;
			# apt still checks what it fetched against the signed index, and
			# we check our own pin below, so a partial fetch is fine.
			apt_init
			(cd "$deps/dl" && apt-get "${apt_opts[@]}" source --download-only -qq "$name=$v" >/dev/null 2>&1) || true
		fi
		[ -f "$deps/dl/$file" ] || { note "$name $v: not served by the archive, trying the next pin"; continue; }
		got=$(sha256sum "$deps/dl/$file" | cut -d' ' -f1)
		if [ "$got" != "$sum" ]; then
			note "$name $v: SHA-256 mismatch ($got), ignoring it"
			rm -f "$deps/dl/$file"
			continue
		fi
		rm -rf "$dir" && mkdir -p "$dir"
		tar -xf "$deps/dl/$file" -C "$dir" --strip-components=1
		printf '%s %s %s\n' "$name" "$v" "$sum" > "$dir/.pinned"
		note "$name $v ready in build/third_party/$name"
		fetched=1
		return 0
	done < <(grep -v '^#' "$top/scripts/deps/pins")
	die "no pinned version of $name could be fetched. Debian's archive keeps only current versions:
  find one with 'apt-cache showsrc $name' against trixie/unstable deb-src lines, then add a line
  '$name VERSION FILE SHA256' (SHA-256 from the Checksums-Sha256 field) to scripts/deps/pins"
}

step 3 "third-party C sources (scripts/deps/pins) in build/third_party"
fetched=0
fetch_source yyjson
fetch_source quickjs-ng
[ "$fetched" = 1 ] || note "all present"
