#!/usr/bin/env bash
# Debian's Chromium for the status page's browser test: `scripts/chromium.sh ensure` installs the `chromium`
# package when /usr/bin/chromium is missing and prints its path. Playwright's own browser download cannot
# reach its CDN from these machines, so the test drives this Chromium with playwright-core instead.
# CI runs as root on a fresh Debian bookworm machine; elsewhere apt-get goes through sudo when it can.
set -euo pipefail

chromium=/usr/bin/chromium

ensure() {
  if [ -x "$chromium" ]; then
    echo "$chromium"
    return 0
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "chromium.sh: $chromium is missing and installing it needs root" >&2; return 1; }
    sudo=(sudo -n)
  fi
  echo "chromium.sh: installing Debian's chromium (a few minutes the first time)" >&2
  # A fresh machine has empty package lists; stdout goes to stderr so that only the path is printed.
  "${sudo[@]}" apt-get update >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends chromium >&2
  [ -x "$chromium" ] || { echo "chromium.sh: apt-get installed chromium but $chromium is missing" >&2; return 1; }
  echo "$chromium"
}

case "${1:-}" in
  ensure) ensure ;;
  path) echo "$chromium" ;;
  *) echo "usage: $0 ensure|path" >&2; exit 2 ;;
esac
