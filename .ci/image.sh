#!/usr/bin/env bash
# Builds the container image (docs/deploy/Dockerfile) with buildah, without a daemon, from this
# machine's release binary, and runs it: the command the image starts with parses, `serve` inside
# it answers /healthz and /metrics on the host's loopback, and without a GPU it says what to do.
# Needs root, buildah and (where no registry is reachable) debootstrap; .ci/run installs them.
#   bash .ci/image.sh [BINARY]   (default target/release/gpuwatch; .ci/run passes the one
#                                .ci/deb.sh built, as the release workflow packs it)
set -euo pipefail
cd "$(dirname "$0")/.."

b() { buildah --storage-driver vfs "$@"; }
base=docker.io/library/debian:bookworm-slim
tmp=$(mktemp -d)
ctr=""
stand_in=""
port=""
cleanup() {
  # Killing `buildah run` leaves the server it chrooted running: stop it by its command line,
  # whose port is this run's alone.
  [ -n "$port" ] && pkill -f -- "gpuwatch serve --demo=hang --listen 127.0.0.1:$port" 2>/dev/null || true
  [ -n "$ctr" ] && b rm "$ctr" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

if ! b inspect --type image "$base" >/dev/null 2>&1 && ! b pull -q "$base" >/dev/null 2>&1; then
  # No registry reachable (as on this project's machines): Debian's minimal bookworm, from its
  # package mirror, stands in for the slim image under the same name.
  echo "image.sh: no $base to pull; making it with debootstrap"
  stand_in=" on a debootstrap stand-in for $base"
  debootstrap --variant=minbase bookworm "$tmp/root" http://deb.debian.org/debian >/dev/null
  root_ctr=$(b from scratch)
  b copy "$root_ctr" "$tmp/root" / >/dev/null
  b commit -q "$root_ctr" "$base" >/dev/null
  b rm "$root_ctr" >/dev/null
  rm -rf "$tmp/root"
fi

arch=$(dpkg --print-architecture)
mkdir -p "$tmp/ctx/$arch"
cp "${1:-target/release/gpuwatch}" "$tmp/ctx/$arch/gpuwatch"
b bud -q --build-arg "TARGETARCH=$arch" -f docs/deploy/Dockerfile -t localhost/gpuwatch:ci "$tmp/ctx" >/dev/null
ctr=$(b from localhost/gpuwatch:ci)

# The image starts `gpuwatch serve --listen 0.0.0.0:9947`: those flags parse.
entry=$(b inspect --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}}' "$ctr")
[ "$entry" = '[/usr/bin/gpuwatch] [serve --listen 0.0.0.0:9947]' ] \
  || { echo "image.sh: the image starts $entry" >&2; exit 1; }
b run --isolation chroot "$ctr" -- /usr/bin/gpuwatch serve --listen 0.0.0.0:9947 --help >/dev/null

# Without the driver (no GPU here, no toolkit to mount it) it says so and exits 2, no panic.
if out=$(b run --isolation chroot "$ctr" -- /usr/bin/gpuwatch devices 2>&1); then
  echo "image.sh: gpuwatch devices succeeded without a driver: $out" >&2; exit 1
fi
grep -q "NVIDIA container toolkit" <<<"$out" || { echo "image.sh: unclear error without a driver: $out" >&2; exit 1; }
! grep -q "panicked" <<<"$out" || { echo "image.sh: $out" >&2; exit 1; }

# serve inside the image, scraped from outside it.
port=$((20000 + RANDOM % 20000))
b run --isolation chroot --network host "$ctr" -- /usr/bin/gpuwatch serve --demo=hang --listen "127.0.0.1:$port" \
  >"$tmp/serve.log" 2>&1 &
serving=$!
ok=""
for _ in $(seq 1 60); do
  if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.5
done
metrics=$(curl -fsS "http://127.0.0.1:$port/metrics" || true)
kill "$serving" 2>/dev/null || true
pkill -f -- "gpuwatch serve --demo=hang --listen 127.0.0.1:$port" 2>/dev/null || true
wait "$serving" 2>/dev/null || true
[ -n "$ok" ] || { echo "image.sh: serve in the image never became ready:" >&2; cat "$tmp/serve.log" >&2; exit 1; }
grep -q '^gpuwatch_up{' <<<"$metrics" || { echo "image.sh: no gpuwatch_up in /metrics" >&2; exit 1; }
size=$(b images --format '{{.Size}}' localhost/gpuwatch:ci)
echo "image.sh: localhost/gpuwatch:ci ($size$stand_in) starts serve; /healthz and /metrics answer from inside it"
