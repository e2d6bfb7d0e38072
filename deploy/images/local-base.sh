#!/usr/bin/env bash
# Local base images for building gpux's images where no registry is reachable
# (CI on these machines): made from Debian's packages (debootstrap, bookworm)
# and this machine's own Node.js 20, in the two roles the public images play
# in a provider's build (deploy/images/README.md):
#
#   localhost/gpux-node:20        what docker.io/library/node:20-bookworm-slim is (the runtime stage's base)
#   localhost/gpux-node-build:20  what docker.io/library/node:20-bookworm is (the build stage's: npm, compilers)
#
# Both carry this machine's CA bundle, so npm in the build reaches the
# registry through whatever TLS proxy the machine trusts. Nothing here is
# used by the public build. Idempotent: an image that exists is kept
# (--force makes both again). Needs root, debootstrap and podman.
set -euo pipefail

runtime=localhost/gpux-node:20
build=localhost/gpux-node-build:20
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ "${1:-}" != --force ] && podman image exists "$runtime" && podman image exists "$build"; then
  echo "local bases: $runtime and $build exist"
  exit 0
fi

node_bin="$(command -v node)"
node_prefix="$(cd "$(dirname "$(readlink -f "$node_bin")")/.." && pwd)"
npm_dir="$(npm root -g)/npm"
[ -d "$node_prefix/include/node" ] || { echo "local-base: no Node.js headers under $node_prefix/include/node" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

echo "local bases: debootstrap bookworm (minbase) from $mirror"
debootstrap --variant=minbase --include=ca-certificates,libstdc++6 bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }

# Node.js where the public image has it, and the machine's CA bundle.
install -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
clean() { rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/var/log/* "$1"/tmp/*; }
clean "$rootfs"

env_path='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
tar -C "$rootfs" -c . | podman import -q --change "$env_path" --change 'CMD ["node"]' - "$runtime" >/dev/null
echo "local bases: $runtime"

# The build base: npm, Node's headers (node-gyp builds node-pty against them,
# offline), compilers and tini, as the public node:20-bookworm image plus the
# Containerfile's own apt-get would give.
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
chroot "$rootfs" apt-get update >"$work/apt.log" 2>&1 &&
  DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get install -y --no-install-recommends \
    python3 make g++ tini >>"$work/apt.log" 2>&1 ||
  { tail -20 "$work/apt.log" >&2; exit 1; }
mkdir -p "$rootfs/usr/local/lib/node_modules" "$rootfs/usr/local/include"
cp -a "$npm_dir" "$rootfs/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
cp -a "$node_prefix/include/node" "$rootfs/usr/local/include/node"
: >"$rootfs/etc/resolv.conf"
clean "$rootfs"
tar -C "$rootfs" -c . | podman import -q --change "$env_path" \
  --change 'ENV npm_config_nodedir=/usr/local' \
  --change 'ENV npm_config_cafile=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' - "$build" >/dev/null
echo "local bases: $build"
