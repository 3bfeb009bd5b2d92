#!/usr/bin/env bash
# The OCI image (docs/CONTAINERS.md).
#
#   scripts/image.sh build   make image: build/image, an OCI layout (tag <version>: sluice:0.1.0)
#   scripts/image.sh test    make test-image: the image unpacked and run by crun,
#                            as Kubernetes would, and driven by the MCP SDK
#   scripts/image.sh seccomp deploy/seccomp/sluice.json made anew from Debian's
#                            copy of Docker's default profile (test checks it is current)
#
# build: one layer, made from
#   - the Debian 12 packages of the libraries build/sluice links (found with
#     ldd and dpkg -S), those it loads when configured (libcurl3-gnutls for
#     remote upstreams and OAuth, libcjose0 for JWT access tokens) and
#     ca-certificates (whose bundle is made here: no maintainer script runs),
#     resolved and fetched by mmdebstrap from Debian's archive, signatures
#     checked, and kept under build/image-cache (a second build is offline;
#     IMAGE_REFRESH=1 fetches the current packages);
#   - build/sluice stripped, the container's config (/etc/sluice/sluice.json:
#     listen on 0.0.0.0:8370, bearer token from $SLUICE_BEARER_TOKEN, code
#     mode on), the example config, the license, and a user sluice (65532).
# Every file's mtime is clamped to SOURCE_DATE_EPOCH (the last commit's
# time), entries are sorted, owners numeric: the same inputs give the same
# digest (umoci, Debian's, assembles the layout; no registry is contacted).
# Needs root (mmdebstrap's root mode, files owned by 65532), like make test-deb.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

die() { printf 'image: %s\n' "$*" >&2; exit 1; }
note() { printf 'image: %s\n' "$*" >&2; }

version=$(sed -n 's/^VERSION *:= *//p' Makefile)
arch=$(dpkg --print-architecture)
layout=build/image
tag=$version
cache=build/image-cache
uid=65532
port=8370
# Loaded with dlopen when configured, so not in ldd's list (src/event/curl.c, src/auth/jose.c).
dlopened=(libcurl3-gnutls libcjose0)
# Pulled in only for ca-certificates' maintainer scripts, which never run here.
unused="openssl debconf perl-base"

# The Debian mirror and security mirror this machine's apt uses.
mirrors() {
	local m s f
	m=${SLUICE_DEBIAN_MIRROR:-}
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		[ -n "$m" ] || m=$(grep -v '^ *#' "$f" | grep -oE '(https?|file)://[^ ]+' | grep -v security | head -n1 || true)
		[ -n "${s:-}" ] || s=$(grep -v '^ *#' "$f" | grep -oE '(https?|file)://[^ ]*security[^ ]*' | head -n1 || true)
	done
	m=${m:-http://deb.debian.org/debian}
	s=${s:-http://deb.debian.org/debian-security}
	printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' "$m" "$m" "$s"
}

# The packages owning the libraries build/sluice loads: each library's path
# as ldd gives it, resolved, and with and without /usr (merged /usr: dpkg
# knows one of them), asked of dpkg in one call.
lib_packages() {
	local libs lib r owners
	libs=$(ldd build/sluice | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
	owners=$(for lib in $libs; do
		r=$(realpath "$lib")
		printf '%s\n' "$lib" "$r" "${lib#/usr}" "/usr$lib" "${r#/usr}"
	done | sort -u | xargs dpkg-query -S 2>/dev/null || true)
	for lib in $libs; do
		r=$(realpath "$lib")
		printf '%s\n' "$owners" | awk -F': ' -v a="$lib" -v b="$r" -v c="${lib#/usr}" -v d="/usr$lib" -v e="${r#/usr}" \
			'$2 == a || $2 == b || $2 == c || $2 == d || $2 == e {sub(/:.*/, "", $1); print $1; found = 1; exit}
			END {exit !found}' || die "no Debian package holds $lib (ldd build/sluice)"
	done | sort -u
}

fetch_debs() { # $1: the cache directory for this package set
	local dir=$1 tmp
	[ -f "$dir/.done" ] && [ -z "${IMAGE_REFRESH:-}" ] && { note "packages from $dir (offline)"; return 0; }
	command -v mmdebstrap >/dev/null || die "mmdebstrap not found: bash scripts/setup.sh"
	rm -rf "$dir" && mkdir -p "$dir"
	tmp=$(realpath "$dir")
	note "fetching $(tr '\n' ' ' <"$dir.list")with mmdebstrap"
	mmdebstrap --quiet --mode=root --variant=extract --include="$(paste -sd, "$dir.list")" \
		--extract-hook="cp \"\$1\"/var/cache/apt/archives/*.deb '$tmp/'" \
		bookworm /dev/null "${mirror_lines[@]}" >"$dir.log" 2>&1 ||
		{ tail -n 20 "$dir.log" >&2; die "mmdebstrap failed (log: $dir.log)"; }
	ls "$dir"/*.deb >/dev/null 2>&1 || die "mmdebstrap fetched no package"
	touch "$dir/.done"
}

# The container's own config: every interface, a token it must be given.
container_config() {
	cat <<EOF
{
  "mcpServers": {},
  "sluice": {
    "http": { "listen": "0.0.0.0:$port", "bearerToken": "\${SLUICE_BEARER_TOKEN}" },
    "codeMode": { "enabled": true }
  }
}
EOF
}

build() {
	local sde created key dir root deb pkg n layer digest size total
	[ "$(id -u)" = 0 ] || die "make image needs root (mmdebstrap's root mode, files owned by $uid)"
	[ -x build/sluice ] || die "no build/sluice: run make"
	command -v umoci >/dev/null || die "umoci not found: bash scripts/setup.sh"
	sde=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || true)}
	[ -n "$sde" ] || die "no SOURCE_DATE_EPOCH and no git history to take it from"
	created=$(date -u -d "@$sde" +%Y-%m-%dT%H:%M:%SZ)
	mapfile -t mirror_lines < <(mirrors)

	# The package set names its cache: a new library means a new fetch.
	mkdir -p "$cache"
	{ lib_packages; printf '%s\n' "${dlopened[@]}" ca-certificates; } | sort -u >"$cache/next.list"
	key=$( { cat "$cache/next.list"; printf '%s\n' "${mirror_lines[@]}"; } | sha256sum | cut -c1-16)
	dir="$cache/debs-$key"
	mv "$cache/next.list" "$dir.list"
	fetch_debs "$dir"

	root=build/image-root
	rm -rf "$root" && mkdir -p "$root"
	for deb in "$dir"/*.deb; do
		pkg=$(dpkg-deb -f "$deb" Package)
		case " $unused " in *" $pkg "*) continue ;; esac
		dpkg-deb -x "$deb" "$root"
		printf '%s %s\n' "$pkg" "$(dpkg-deb -f "$deb" Version)" >>"$root.packages"
	done
	# What a container never reads: documentation (each copyright file
	# stays), translations, character set converters, packaging metadata.
	find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
	rm -rf "$root/usr/share/man" "$root/usr/share/locale" "$root/usr/share/info" "$root/usr/share/lintian" \
		"$root"/usr/lib/*/gconv "$root/usr/sbin/update-ca-certificates" \
		"$root/etc/ca-certificates" "$root/usr/share/bug"
	# ca-certificates' bundle, as update-ca-certificates would write it.
	mkdir -p "$root/etc/ssl/certs"
	find "$root/usr/share/ca-certificates" -name '*.crt' | LC_ALL=C sort | xargs cat >"$root/etc/ssl/certs/ca-certificates.crt"
	[ -s "$root/etc/ssl/certs/ca-certificates.crt" ] || die "no CA certificate in ca-certificates"
	# Merged /usr, as Debian 12 is: /lib64/ld-linux-x86-64.so.2 must resolve.
	for n in bin sbin lib lib64; do
		if [ -d "$root/$n" ] && [ ! -L "$root/$n" ]; then
			mkdir -p "$root/usr/$n" && cp -a "$root/$n/." "$root/usr/$n/" && rm -rf "${root:?}/$n"
		fi
		[ -d "$root/usr/$n" ] && ln -s "usr/$n" "$root/$n"
	done

	# sluice itself.
	install -d "$root/usr/bin" "$root/etc/sluice" "$root/usr/share/doc/sluice/examples" "$root/tmp" \
		"$root/proc" "$root/dev" "$root/sys" "$root/run"
	chmod 1777 "$root/tmp"
	strip --strip-unneeded -o "$root/usr/bin/sluice" build/sluice
	container_config >"$root/etc/sluice/sluice.json"
	cp examples/sluice.json "$root/usr/share/doc/sluice/examples/sluice.json"
	cp LICENSE "$root/usr/share/doc/sluice/copyright"
	sort "$root.packages" >"$root/usr/share/doc/sluice/packages" && rm -f "$root.packages"
	printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nsluice:x:%s:%s:sluice:/var/lib/sluice:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
		"$uid" "$uid" >"$root/etc/passwd"
	printf 'root:x:0:\nsluice:x:%s:\nnogroup:x:65534:\n' "$uid" >"$root/etc/group"
	printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
	# The state (tool pins, skills, tokens): a volume in a read-only root.
	install -d -m 0750 -o "$uid" -g "$uid" "$root/var/lib/sluice"
	chroot "$root" /usr/bin/sluice --version >/dev/null || die "build/sluice does not run in the image's root (a library missing?)"

	# One layer, sorted, owners numeric, mtimes clamped: reproducible.
	layer=build/image-layer.tar
	tar --sort=name --format=posix --numeric-owner \
		--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
		--mtime="@$sde" --clamp-mtime -C "$root" -cf "$layer" .
	rm -rf "$layout"
	umoci init --layout "$layout"
	umoci new --image "$layout:$tag"
	umoci raw add-layer --image "$layout:$tag" --history.created "$created" \
		--history.created_by "scripts/image.sh (Debian 12 packages, build/sluice)" "$layer"
	umoci config --image "$layout:$tag" --created "$created" --history.created "$created" \
		--history.created_by "scripts/image.sh (runtime config)" \
		--architecture "$arch" --os linux --author "sluice" \
		--config.user "$uid:$uid" --config.entrypoint /usr/bin/sluice \
		--config.cmd serve --config.cmd --config --config.cmd /etc/sluice/sluice.json \
		--config.env PATH=/usr/bin --config.env XDG_STATE_HOME=/var/lib --config.env HOME=/var/lib/sluice \
		--config.workingdir /var/lib/sluice --config.volume /var/lib/sluice \
		--config.exposedports "$port/tcp" --config.stopsignal SIGTERM \
		--config.label "org.opencontainers.image.title=sluice" \
		--config.label "org.opencontainers.image.version=$version" \
		--config.label "org.opencontainers.image.licenses=Apache-2.0" \
		--config.label "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
		--manifest.annotation "org.opencontainers.image.created=$created"
	umoci gc --layout "$layout"
	rm -f "$layer"
	digest=$(image_digest)
	size=$(du -sb "$layout/blobs" | cut -f1)
	total=$(du -sb "$root" | cut -f1)
	note "$layout (sluice:$tag): digest $digest"
	note "size: $((size / 1024 / 1024)) MiB compressed ($size bytes), $((total / 1024 / 1024)) MiB unpacked; $(wc -l <"$root/usr/share/doc/sluice/packages") Debian packages (usr/share/doc/sluice/packages)"
	rm -rf "$root"
	echo "$digest" >"$layout.digest"
}

# The manifest's digest, as a registry would name the image.
image_digest() {
	node -e 'const i = JSON.parse(require("fs").readFileSync(process.argv[1] + "/index.json"));
		const m = i.manifests.find((m) => m.annotations["org.opencontainers.image.ref.name"] === process.argv[2]);
		if (!m) process.exit(1);
		console.log(m.digest);' "$layout" "$tag"
}

# Docker's default profile as Debian 12 ships it (the source of docker.io,
# packaged as golang-github-docker-docker-dev), fetched once into the cache.
default_profile() {
	local dir=$cache/docker f
	f=$dir/default.json
	if [ ! -f "$f" ]; then
		mkdir -p "$dir/x"
		# Lists emptied since the last update (a trimmed machine image): read them again.
		(cd "$dir" && apt-get download -qq golang-github-docker-docker-dev >/dev/null 2>&1) ||
			{ apt-get update -qq >/dev/null 2>&1 &&
				(cd "$dir" && apt-get download -qq golang-github-docker-docker-dev >/dev/null 2>&1); } ||
			die "apt-get download golang-github-docker-docker-dev failed: the Debian archive must be reachable once"
		dpkg-deb -x "$dir"/golang-github-docker-docker-dev_*.deb "$dir/x"
		cp "$dir/x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json" "$f"
		rm -rf "$dir/x"
	fi
	echo "$f"
}

seccomp() {
	node tests/image/seccomp.mjs sluice "$(default_profile)" >deploy/seccomp/sluice.json.tmp
	mv deploy/seccomp/sluice.json.tmp deploy/seccomp/sluice.json
	note "deploy/seccomp/sluice.json"
}

test_image() {
	local start=$SECONDS
	[ "$(id -u)" = 0 ] || die "make test-image needs root (crun with its own namespaces)"
	command -v crun >/dev/null || die "crun not found: bash scripts/setup.sh"
	[ -f "$layout/index.json" ] || die "no $layout: run make image"
	node tests/image/seccomp.mjs sluice "$(default_profile)" | cmp -s - deploy/seccomp/sluice.json ||
		die "deploy/seccomp/sluice.json is not Debian's default profile plus the sandbox's rule: scripts/image.sh seccomp"
	SLUICE_IMAGE=$layout SLUICE_IMAGE_TAG=$tag DEFAULT_PROFILE=$(default_profile) \
		CATALOG=${CATALOG:-$top/build/tests/catalog} node tests/image/run.mjs
	note "passed in $((SECONDS - start)) s"
}

case "${1:-}" in
build) build ;;
test) test_image ;;
seccomp) seccomp ;;
*) die "usage: image.sh build|test|seccomp" ;;
esac
