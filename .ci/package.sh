#!/usr/bin/env bash
# Packs what .ci/deb.sh built for TARGET into the release's three files: a tarball (binary,
# README, LICENSE, man page, completions), the .deb, and their SHA-256 sums.
#   bash .ci/package.sh TARGET VERSION   -> gpuwatch-VERSION-TARGET.{tar.gz,deb,sha256}
# The release workflow runs it after deb.sh; .ci/release.sh runs those same two steps, read from
# the workflow, and checks the files.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: package.sh TARGET VERSION}
version=${2:?usage: package.sh TARGET VERSION}
name="gpuwatch-$version-$target"
rm -rf "$name"
mkdir "$name"
cp "target/$target/release/gpuwatch" README.md LICENSE target/assets/* "$name/"
tar czf "$name.tar.gz" "$name"
rm -rf "$name"
cp "target/gpuwatch-$target.deb" "$name.deb"
sha256sum "$name.tar.gz" "$name.deb" > "$name.sha256"
echo "package.sh: $name.tar.gz, $name.deb, $name.sha256"
