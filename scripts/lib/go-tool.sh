#!/usr/bin/env bash
# Sourced by the scripts that build a test tool with `go install` once per machine (toxiproxy.sh, temporal.sh,
# helm.sh). go_tool_ensure NAME PACKAGE VERSION [BUILT_NAME] prints the path of $WORKERLESS_CACHE_DIR/bin/NAME,
# building PACKAGE@VERSION first unless that binary's stamp already says VERSION. The build goes to a private
# GOBIN and is moved into place, so two builds at once (parallel CI jobs on one cache) never leave a half-written
# binary; BUILT_NAME is what `go install` names it (its package directory) when that differs from NAME.

WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
GO_TOOL_BIN="$WORKERLESS_CACHE_DIR/bin"

go_tool_ensure() {
  local name="$1" package="$2" version="$3" built="${4:-$1}"
  local tool="$GO_TOOL_BIN/$name" stamp="$GO_TOOL_BIN/$name.version"
  if [ -x "$tool" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    echo "$tool"
    return 0
  fi
  command -v go >/dev/null || { echo "$name: Go is needed to build $package" >&2; return 1; }
  mkdir -p "$GO_TOOL_BIN"
  echo "building $name $version into $GO_TOOL_BIN (once per machine; ${GO_TOOL_HINT:-a minute or more})" >&2
  local build_dir
  build_dir="$(mktemp -d "$GO_TOOL_BIN/.$name-build.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: build_dir is local
  trap "rm -rf '$build_dir'" RETURN
  GOBIN="$build_dir" GOFLAGS="${GOFLAGS:--trimpath}" go install "$package@$version" >&2
  mv -f "$build_dir/$built" "$tool"
  echo "$version" >"$stamp"
  echo "$tool"
}
