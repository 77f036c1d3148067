#!/usr/bin/env bash
# `npm run image`: builds the Containerfile as media-platform:<package version> (docs/operations.md,
# "The container image"). With a Docker engine, `docker build`; otherwise Debian's buildah (as
# root, chroot isolation: no daemon, no user namespaces; the storage driver is the machine's,
# overlay, or vfs where overlay cannot run: STORAGE_DRIVER=vfs). When the official base
# cannot be pulled, an equivalent is assembled locally first (scripts/image-base.sh) and passed
# as the BASE build argument.
#   IMAGE_BASE=<image>   build on this base instead (must be present or pullable)
#   IMAGE_BUILDER=buildah  buildah even where a Docker engine runs
#   NODE_EXTRA_CA_CERTS  extra CA certificates (a TLS-intercepting proxy before the npm registry),
#                        else npm's `cafile` setting: handed to the build's npm as the build secret
#                        `ca`, never stored in the image. HTTP(S)_PROXY pass into the build's steps
#                        (buildah and docker do so by default) and are not stored either.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(node -p 'require("./package.json").version')
tag="media-platform:$version"
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD 2>/dev/null; then revision="$revision-dirty"; fi
source_url=$(git remote get-url origin 2>/dev/null || echo unknown)
official=docker.io/library/node:24-bookworm-slim
local_base=localhost/node:24-bookworm-slim
args=(--file Containerfile --tag "$tag" --build-arg "VERSION=$version"
  --build-arg "REVISION=$revision" --build-arg "SOURCE=$source_url")
ca=${NODE_EXTRA_CA_CERTS:-}
[ -n "$ca" ] || ca=$(npm config get cafile 2>/dev/null || true)
if [ -n "$ca" ] && [ "$ca" != null ] && [ -f "$ca" ]; then
  args+=(--secret "id=ca,src=$ca")
fi

if [ "${IMAGE_BUILDER:-}" != buildah ] && command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  echo "image: docker build $tag"
  [ -n "${IMAGE_BASE:-}" ] && args+=(--build-arg "BASE=$IMAGE_BASE")
  docker build "${args[@]}" .
  exit 0
fi

command -v buildah >/dev/null || {
  echo "image: neither a Docker engine nor buildah (apt-get install buildah)" >&2
  exit 1
}
base=${IMAGE_BASE:-}
if [ -z "$base" ]; then
  if buildah inspect --type image "$official" >/dev/null 2>&1 ||
    timeout 120 buildah pull --quiet "$official" >/dev/null 2>&1; then
    base=$official
  else
    echo "image: $official cannot be pulled here; assembling $local_base (scripts/image-base.sh)"
    # Reused while it was made by this version of the script (a label holds the script's hash).
    made_by=$(buildah inspect --type image --format '{{index .Docker.Config.Labels "media-platform.base-script"}}' "$local_base" 2>/dev/null || true)
    if [ "$made_by" != "$(sha256sum scripts/image-base.sh | cut -c1-64)" ]; then
      scripts/image-base.sh "$local_base"
    fi
    base=$local_base
  fi
fi
echo "image: buildah build $tag on $base"
# --format docker: the OCI format has no HEALTHCHECK. The host network: npm ci reaches the registry.
# No layer per step (--layers=false): each stage commits once, which is what is fastest here.
buildah build --isolation chroot --network host --format docker --layers=false --pull=false \
  --build-arg "BASE=$base" "${args[@]}" .
