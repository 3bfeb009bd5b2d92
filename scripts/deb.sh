#!/usr/bin/env bash
# The Debian package (docs/PACKAGING.md).
#
#   scripts/deb.sh build   make deb: build/sluice_<version>_<arch>.deb
#                          (DEB_JOBS: compile jobs, default nproc)
#   scripts/deb.sh test    make test-deb: lintian, then install it into a
#                          throw-away root, serve as sluice.service would, call a tool
#
# build: dpkg-buildpackage runs in a copy of the tree (build/deb/sluice-<v>)
# that carries what scripts/setup.sh fetched (build/third_party, the
# stripper's npm tree in build/stripper), so the package build itself needs
# no network and leaves this tree's build/ alone.
#
# test: the root is this machine's own file system seen through an overlay
# whose writable layer is a tmpfs, in a private mount namespace (unshare
# -m): dpkg -i, the postinst (the sluice user), the conffile and the unit
# land in memory and vanish with the namespace; nothing on disk changes.
# Needs root (CAP_SYS_ADMIN for the mounts), like apt-get in setup.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

die() { printf 'deb: %s\n' "$*" >&2; exit 1; }
note() { printf 'deb: %s\n' "$*" >&2; }

version=$(sed -n 's/^VERSION *:= *//p' Makefile)
arch=$(dpkg --print-architecture)
deb="build/sluice_${version}_${arch}.deb"

build() {
	local cl dir
	# Debian packages (debhelper, lintian...), third-party sources, stripper.
	bash scripts/setup.sh build
	cl=$(dpkg-parsechangelog -SVersion)
	[ "$cl" = "$version" ] ||
		die "debian/changelog is at $cl but the Makefile's VERSION is $version: add a changelog entry (dch -v $version)"
	dir="build/deb/sluice-$version"
	rm -rf build/deb && mkdir -p "$dir/build"
	# The sources as they are (committed or not), without build output.
	tar -c --exclude=./build --exclude=./node_modules --exclude=./.git . | tar -x -C "$dir"
	# The commit the binary reports (sluice --version), for a tree without .git.
	make -s --no-print-directory print-commit > "$dir/COMMIT"
	# What setup fetched, mtimes kept so that make sees it current.
	cp -a build/third_party build/stripper "$dir/build/"
	note "dpkg-buildpackage in $dir"
	(cd "$dir" && dpkg-buildpackage -b -us -uc -j"${DEB_JOBS:-$(nproc)}") > build/deb/build.log 2>&1 ||
		{ tail -n 40 build/deb/build.log >&2; die "dpkg-buildpackage failed (whole log: build/deb/build.log)"; }
	cp "build/deb/$(basename "$deb")" "$deb"
	note "$deb"
}

# The hardening of the two units (deploy/): the same directives, the
# reasons written once in sluice.service.
hardening() {
	sed -n '/^# Hardening/,/^\[Install\]/p' "$1" | grep -E '^[A-Za-z]+='
}

# test, in the private mount namespace: $1 the package.
inroot() {
	local pkg=$1 tmp root port log pid unit exec user group envs statedir r i
	tmp=$(mktemp -d /tmp/sluice-deb.XXXXXX)
	mount -t tmpfs -o size=1g tmpfs "$tmp"
	mkdir "$tmp/upper" "$tmp/work" "$tmp/root"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$tmp/upper,workdir=$tmp/work" "$tmp/root" ||
		die "cannot mount an overlay of / (needs overlayfs and CAP_SYS_ADMIN; docs/PACKAGING.md)"
	root=$tmp/root
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs tmpfs "$root/run"
	mount -t tmpfs tmpfs "$root/tmp"
	# The upstream the service is given, from this tree: bound in, read-only,
	# at a fixed path, since the tree may sit on another mount or under /tmp,
	# which the overlay of / does not show.
	mkdir -p "$root/opt/sluice-test/node_modules"
	mount --bind "$top/node_modules" "$root/opt/sluice-test/node_modules"
	mount -o remount,bind,ro "$root/opt/sluice-test/node_modules"

	[ ! -e "$root/usr/bin/sluice" ] || die "the root already has /usr/bin/sluice: not a clean root"
	chroot "$root" dpkg-query -W sluice >/dev/null 2>&1 && die "sluice is already installed on this machine"
	cp "$pkg" "$root/tmp/"
	chroot "$root" dpkg -i "/tmp/$(basename "$pkg")" >"$tmp/dpkg.log" 2>&1 ||
		{ cat "$tmp/dpkg.log" >&2; die "dpkg -i failed"; }
	note "installed: $(chroot "$root" dpkg-query -W sluice)"

	for f in /usr/bin/sluice /usr/share/man/man1/sluice.1.gz /usr/share/bash-completion/completions/sluice \
		/usr/share/doc/sluice/examples/sluice.json /usr/share/doc/sluice/copyright \
		/lib/systemd/system/sluice.service /etc/sluice/sluice.json \
		/etc/systemd/system/multi-user.target.wants/sluice.service; do
		# -L: the wants/ link points into the root, not this machine.
		[ -e "$root$f" ] || [ -L "$root$f" ] || die "$f is missing after dpkg -i"
	done
	chroot "$root" dpkg-query -W -f='${Conffiles}\n' sluice | grep -q '^ /etc/sluice/sluice.json ' ||
		die "/etc/sluice/sluice.json is not a conffile"
	chroot "$root" getent passwd sluice | grep -q ':/var/lib/sluice:' ||
		die "the postinst made no system user sluice with home /var/lib/sluice"
	[ "$(chroot "$root" /usr/bin/sluice --version)" = "sluice $version (commit $(make -s --no-print-directory print-commit))" ] ||
		die "sluice --version is not $version (commit $(make -s --no-print-directory print-commit))"
	# The example config and the shipped conffile load (policy check
	# parses the whole config and starts no server).
	for f in /usr/share/doc/sluice/examples/sluice.json /etc/sluice/sluice.json; do
		chroot "$root" /usr/bin/sluice policy check everything.echo --config "$f" >/dev/null ||
			die "$f does not load"
	done
	# The man page as man renders it, the completion as bash runs it.
	chroot "$root" sh -c 'zcat /usr/share/man/man1/sluice.1.gz | groff -man -Tutf8 -ww -z' 2>"$tmp/groff" ||
		die "groff cannot render sluice(1)"
	[ ! -s "$tmp/groff" ] || { cat "$tmp/groff" >&2; die "groff warns about sluice(1)"; }
	r=$(chroot "$root" bash -c '. /usr/share/bash-completion/completions/sluice
		COMP_WORDS=(sluice pins ""); COMP_CWORD=2; _sluice; echo "${COMPREPLY[*]}"')
	[ "$r" = "approve diff list reset" ] || die "completion of 'sluice pins ': '$r'"

	# The service's command, as systemd would start it: its user, its
	# Environment=, its StateDirectory= made and owned by that user.
	unit="$root/lib/systemd/system/sluice.service"
	exec=$(sed -n 's/^ExecStart=//p' "$unit")
	user=$(sed -n 's/^User=//p' "$unit")
	group=$(sed -n 's/^Group=//p' "$unit")
	envs=$(sed -n 's/^Environment=//p' "$unit")
	statedir=$(sed -n 's/^StateDirectory=//p' "$unit")
	[ -n "$exec" ] && [ -n "$user" ] && [ -n "$group" ] && [ -n "$statedir" ] ||
		die "the unit lacks ExecStart=, User=, Group= or StateDirectory="
	install -d -o "$(chroot "$root" id -u "$user")" -g "$(chroot "$root" id -g "$user")" -m 0750 \
		"$root/var/lib/$statedir"
	# The conffile, edited as a person would: a server and a free port.
	port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
	cat > "$root/etc/sluice/sluice.json" <<EOF
{
  "mcpServers": { "everything": { "command": "/opt/sluice-test/node_modules/.bin/mcp-server-everything", "args": ["stdio"] } },
  "sluice": { "http": { "listen": "127.0.0.1:$port" } }
}
EOF
	log=$tmp/serve.log
	# shellcheck disable=SC2086 # ExecStart= and Environment= are word lists
	chroot "$root" setpriv --reuid="$user" --regid="$group" --init-groups \
		env -i PATH=/usr/bin:/bin $envs $exec 2>"$log" &
	pid=$!
	for ((i = 0; i < 150; i++)); do
		grep -q "listening on http://127.0.0.1:$port" "$log" && break
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "the service's command exited"; }
		sleep 0.1
	done
	grep -q "listening on" "$log" || { kill "$pid"; cat "$log" >&2; die "the service did not listen in 15 s"; }
	note "serving as $user: $exec"
	node tests/deb/call.mjs "http://127.0.0.1:$port/mcp" || { kill "$pid"; cat "$log" >&2; die "the tool call failed"; }
	kill -TERM "$pid"
	for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; die "the service ignored SIGTERM for 10 s"; }
	wait "$pid" || true
	# Its state (tool pins) went where the unit says: XDG_STATE_HOME/sluice.
	r=$(cd "$root/var/lib/$statedir" && find . -type f -user "$(chroot "$root" id -u "$user")" | sort | tr '\n' ' ')
	[ -n "$r" ] || die "the service wrote no state in /var/lib/$statedir"
	note "state in /var/lib/$statedir: $r"

	chroot "$root" dpkg --purge sluice >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; die "dpkg --purge failed"; }
	for f in /usr/bin/sluice /etc/sluice/sluice.json /lib/systemd/system/sluice.service \
		/etc/systemd/system/multi-user.target.wants/sluice.service; do
		[ ! -e "$root$f" ] && [ ! -L "$root$f" ] || die "$f is still there after dpkg --purge"
	done
	note "purged: no file left behind"
}

test_deb() {
	local start=$SECONDS out
	[ "$(id -u)" = 0 ] || die "make test-deb needs root (mounts in a private namespace, chroot)"
	[ -f "$deb" ] || die "no $deb: run make deb"
	[ "$(hardening deploy/sluice.service)" = "$(hardening deploy/sluice@.service)" ] ||
		die "deploy/sluice.service and deploy/sluice@.service differ in hardening: $(diff <(hardening deploy/sluice.service) <(hardening deploy/sluice@.service) | tr '\n' ' ')"
	out=$(lintian --fail-on error --info "$deb" 2>&1) ||
		{ printf '%s\n' "$out" >&2; die "lintian reports errors"; }
	printf '%s\n' "$out" | sed 's/^/lintian: /' >&2
	note "lintian: $(printf '%s\n' "$out" | grep -c '^E:' || true) errors, $(printf '%s\n' "$out" | grep -c '^W:' || true) warnings"
	unshare -m --propagation private bash "$0" inroot "$top/$deb"
	note "passed in $((SECONDS - start)) s"
}

case "${1:-}" in
build) build ;;
test) test_deb ;;
inroot) inroot "$2" ;;
*) die "usage: deb.sh build|test" ;;
esac
