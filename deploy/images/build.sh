#!/usr/bin/env bash
# `npm run images [-- <target>… ] [-- <engine flags>…]`: builds the images of
# deploy/images/Containerfile with podman, or docker where podman is absent,
# and tags them by the scheme of deploy/images/README.md:
#
#   ${GPUX_IMAGE_REPO:-ghcr.io/gpux}/agent:<version>
#   ${GPUX_IMAGE_REPO:-ghcr.io/gpux}/exchange:<version>
#
# <version> is package.json's. Targets: agent, exchange (default: both).
# Anything else is passed to `<engine> build` as is, e.g.
#   npm run images -- agent --build-arg BASE=… --build-arg BUILD_BASE=…
set -euo pipefail
cd "$(dirname "$0")/../.."

engine="${GPUX_IMAGE_ENGINE:-}"
if [ -z "$engine" ]; then
  if command -v podman >/dev/null; then engine=podman
  elif command -v docker >/dev/null; then engine=docker
  else echo "images: neither podman nor docker is installed" >&2; exit 1
  fi
fi

targets=()
flags=()
for a in "$@"; do
  case "$a" in
    agent | exchange) targets+=("$a") ;;
    *) flags+=("$a") ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(agent exchange)

repo="${GPUX_IMAGE_REPO:-ghcr.io/gpux}"
version="$(node -p 'require("./package.json").version')"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
if [ "$revision" != unknown ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then revision="$revision-dirty"; fi

for target in "${targets[@]}"; do
  image="$repo/$target:$version"
  echo "images: building $image with $engine"
  "$engine" build -f deploy/images/Containerfile --target "$target" \
    --build-arg VERSION="$version" --build-arg REVISION="$revision" \
    -t "$image" ${flags[@]+"${flags[@]}"} .
  echo "images: built $image"
done
