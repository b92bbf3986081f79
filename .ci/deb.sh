#!/usr/bin/env bash
# Builds the .deb (man page, completions, systemd unit, binary) and checks what it installs.
# The release workflow runs this for each target; .ci/run runs it for this machine's, so a
# package that lost a file, or a man page that no longer renders, fails before a release does.
#   bash .ci/deb.sh [--target TRIPLE] [--glibc 2.17]   -> target/gpuwatch-<TRIPLE or host>.deb
# --glibc links with zig (cargo-zigbuild) against that glibc's symbols, so the binary runs on
# every glibc since (CentOS 7, RHEL 8 and Ubuntu 18.04 GPU nodes among them; NVML is opened at
# run time, so no static musl), and checks the binary asks for no newer symbol. Installs what it
# lacks: cargo-deb, and for --glibc cargo-zigbuild and zig (PyPI's ziglang, with pip).
set -euo pipefail
cd "$(dirname "$0")/.."

target=""
glibc=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="$2"; shift 2 ;;
    --glibc) glibc="$2"; shift 2 ;;
    *) echo "deb.sh: unknown argument $1 (--target TRIPLE, --glibc VERSION)" >&2; exit 2 ;;
  esac
done
host=$(rustc -vV | sed -n 's/^host: //p')
triple=${target:-$host}
deb="target/gpuwatch-$triple.deb"

command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked --version 3.8.0
if [ -n "$glibc" ]; then
  command -v cargo-zigbuild >/dev/null 2>&1 || cargo install cargo-zigbuild --locked --version 0.24.1
  if ! command -v zig >/dev/null 2>&1 && ! python3 -m ziglang version >/dev/null 2>&1; then
    python3 -m pip install --quiet ziglang==0.17.1 || {
      echo "deb.sh: --glibc needs zig: pip install ziglang==0.17.1 (or zig on PATH)" >&2
      exit 1
    }
  fi
  # Stripped as it links: cargo-deb's strip is this machine's, which cannot read another
  # architecture's binary. cargo-zigbuild writes to target/TRIPLE/release, as --target does.
  CARGO_PROFILE_RELEASE_STRIP=symbols cargo zigbuild --release --locked --target "$triple.$glibc"
  target=$triple
  bin="target/$triple/release/gpuwatch"
  newest=$(readelf -V "$bin" | grep -o 'Name: GLIBC_[0-9.]*' | sed 's/.*GLIBC_//' | sort -uV | tail -1)
  if [ "$(printf '%s\n%s\n' "$newest" "$glibc" | sort -V | tail -1)" != "$glibc" ]; then
    echo "deb.sh: $bin asks for glibc $newest, newer than $glibc" >&2
    exit 1
  fi
  echo "deb.sh: $bin asks for glibc $newest at most"
else
  cargo build --release --locked ${target:+--target "$target"}
  bin="target/${target:+$target/}release/gpuwatch"
fi

# The man page and completions are the same text for every target; a cross-built binary cannot
# run here, so they come from a build for this machine then.
gpuwatch() {
  if [ "$triple" = "$host" ]; then "$bin" "$@"; else cargo run --quiet --release --locked -- "$@"; fi
}
mkdir -p target/assets
gpuwatch man > target/assets/gpuwatch.1
for sh in bash zsh fish; do
  gpuwatch completions "$sh" > "target/assets/gpuwatch.$sh"
done
# The glibc build's package depends on that glibc (a variant in Cargo.toml), not on this
# machine's.
cargo deb --no-build ${target:+--target "$target"} ${glibc:+--variant "glibc-$glibc" --no-strip} \
  --output "$deb"
if [ -n "$glibc" ] && [ "$(dpkg-deb -f "$deb" Depends)" != "libc6 (>= $glibc)" ]; then
  echo "deb.sh: $deb depends on '$(dpkg-deb -f "$deb" Depends)', not libc6 (>= $glibc)" >&2
  exit 1
fi

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
