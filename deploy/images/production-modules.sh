#!/bin/sh
# Inside the image build (deploy/images/Containerfile): installs the
# production dependencies of the given workspaces (and of the workspaces they
# use) with their native addons built, then removes what no running program
# reads: other platforms' prebuilt node-pty binaries (58 MB), addon sources
# and objects, type declarations, source maps, documents.
set -eu
ws=""
for w in "$@"; do ws="$ws --workspace=$w"; done
# shellcheck disable=SC2086
npm ci --omit=dev --include-workspace-root=false --no-audit --no-fund $ws
rm -rf node_modules/node-pty/prebuilds node_modules/node-pty/deps node_modules/node-pty/third_party \
  node_modules/node-pty/src node_modules/node-pty/node-addon-api node_modules/node-pty/scripts \
  node_modules/@types node_modules/.package-lock.json
for addon in node_modules/node-pty node_modules/ssh2/lib/protocol/crypto node_modules/cpu-features; do
  [ -d "$addon/build" ] || continue
  find "$addon/build" -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} +
  [ -d "$addon/build/Release" ] && find "$addon/build/Release" -mindepth 1 ! -name '*.node' -exec rm -rf {} +
done
find . -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \
  -o -name '*.md' -o -name '*.markdown' -o -name '*.cc' -o -name '*.cpp' -o -name '*.h' \) -delete
rm -rf /root/.npm /tmp/*
