#!/usr/bin/env bash
# Builds the .deb (man page, completions, systemd unit, binary) and checks what it installs.
# The release workflow runs this for each target; .ci/run runs it for this machine's, so a
# package that lost a file, or a man page that no longer renders, fails before a release does.
#   bash .ci/deb.sh [--target TRIPLE]    -> target/gpuwatch-<TRIPLE or host>.deb
set -euo pipefail
cd "$(dirname "$0")/.."

target=""
if [ "${1:-}" = "--target" ]; then target="$2"; fi
host=$(rustc -vV | sed -n 's/^host: //p')
triple=${target:-$host}
deb="target/gpuwatch-$triple.deb"

command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked --version 3.8.0
cargo build --release --locked ${target:+--target "$target"}

# The man page and completions come from a build for this machine: they are the same text for
# every target, and a cross-built binary cannot run here.
mkdir -p target/assets
cargo run --quiet --release --locked -- man > target/assets/gpuwatch.1
for sh in bash zsh fish; do
  cargo run --quiet --release --locked -- completions "$sh" > "target/assets/gpuwatch.$sh"
done
cargo deb --no-build ${target:+--target "$target"} --output "$deb"

# What it installs, unpacked into a scratch root (no dpkg -i: CI need not own the machine).
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
for f in usr/bin/gpuwatch usr/share/man/man1/gpuwatch.1.gz \
  usr/share/bash-completion/completions/gpuwatch usr/share/zsh/vendor-completions/_gpuwatch \
  usr/share/fish/vendor_completions.d/gpuwatch.fish lib/systemd/system/gpuwatch.service \
  usr/share/doc/gpuwatch/copyright; do
  [ -s "$root/$f" ] || { echo "deb.sh: $deb lacks /$f" >&2; exit 1; }
done
dpkg-deb -f "$deb" Package Version Architecture Depends
if command -v man >/dev/null 2>&1; then
  warnings=$(LC_ALL=C MANPAGER=cat man -l "$root/usr/share/man/man1/gpuwatch.1.gz" 2>&1 >/dev/null)
  [ -z "$warnings" ] || { echo "deb.sh: the packaged man page warns: $warnings" >&2; exit 1; }
fi
if [ "$triple" = "$host" ]; then
  "$root/usr/bin/gpuwatch" --version
  "$root/usr/bin/gpuwatch" diagnose --demo=hang --for 40s >/dev/null && rc=0 || rc=$?
  [ "$rc" = 1 ] || { echo "deb.sh: the packaged binary's diagnose --demo=hang exited $rc, not 1" >&2; exit 1; }
  bash -c ". '$root/usr/share/bash-completion/completions/gpuwatch' && complete -p gpuwatch" >/dev/null
fi
echo "deb.sh: $deb ($(du -h "$deb" | cut -f1)) installs its binary, man page, completions and unit"
