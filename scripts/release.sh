#!/usr/bin/env bash
# make release: what a release of this commit ships, in build/release/ (docs/RELEASES.md):
#   sluice-<version>.tar.gz    the sources of the commit (git archive) and a COMMIT file,
#                              so that a build from the tarball reports the same commit
#   sluice_<version>_<arch>.deb  the Debian package (make deb)
#   sluice-<version>-oci.tar   the OCI image (make image) as an OCI layout in a tar
#                              (`skopeo copy oci-archive:...`), its manifest digest in
#                              sluice-<version>-oci.digest
#   SHA256SUMS                 the SHA-256 of each
# From a clean tree only: a release is a commit, not a working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "release: $*" >&2; exit 1; }

version=$(sed -n 's/^VERSION *:= *//p' Makefile)
commit=$(make -s --no-print-directory print-commit)
case $commit in
*-dirty) die "the tree has uncommitted changes: commit them first (the release is of a commit)" ;;
unknown) die "not a git checkout: make release runs in the repository" ;;
esac
grep -q "^## $version\b" CHANGELOG.md || die "CHANGELOG.md has no section for $version"

out=build/release
rm -rf "$out" && mkdir -p "$out"
name=sluice-$version
epoch=$(git log -1 --format=%ct)

# The sources: git archive stamps every entry with the commit's time; the COMMIT file
# gets the same, owner root, so the tarball is the same bytes for the same commit.
git archive --format=tar --prefix="$name/" HEAD > "$out/$name.tar"
printf '%s\n' "$commit" > "$out/COMMIT"
tar --append -f "$out/$name.tar" --transform="s|^COMMIT|$name/COMMIT|" -C "$out" \
	--mtime="@$epoch" --owner=0 --group=0 --numeric-owner COMMIT
rm "$out/COMMIT"
gzip -n -9 "$out/$name.tar"

make deb
cp "build/sluice_${version}_$(dpkg --print-architecture).deb" "$out/"

make image
tar -c -f "$out/$name-oci.tar" -C build/image --sort=name --mtime="@$epoch" --owner=0 --group=0 \
	--numeric-owner .
cp build/image.digest "$out/$name-oci.digest"

(cd "$out" && sha256sum -- * > SHA256SUMS)
echo "release $version (commit $commit) in $out:"
cat "$out/SHA256SUMS"
