# Puts Node.js 24 first on PATH, for CI and for anyone whose machine has an older Node:
#   source .ci/node.sh
# When the `node` on PATH is already 24, it is used as it is. Otherwise the `node-linux-<arch>` package of
# the npm registry (the official binary with its C headers) is unpacked once into the user's cache directory,
# outside any clone, and reused from there: a second clone fetches nothing. The registry is the only network
# needed: better-sqlite3 and sharp ship prebuilt Node-API binaries, and an addon that builds from source
# finds the headers through npm_config_nodedir instead of downloading them.
# CI_NODE_VERSION picks another release of the 24 line (a security release, say).

CI_NODE_VERSION="${CI_NODE_VERSION:-24.21.0}"

ci_node_setup() {
  local major="${CI_NODE_VERSION%%.*}"
  if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "$major" ]; then
    return 0
  fi
  local arch
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "No Node.js $major package for $(uname -m) in the npm registry" >&2; return 1 ;;
  esac
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/pet-adoption"
  local dir="$cache/node-v$CI_NODE_VERSION-linux-$arch"
  if [ ! -x "$dir/bin/node" ]; then
    echo "Installing Node.js $CI_NODE_VERSION from the npm registry into $dir"
    mkdir -p "$cache"
    local tmp
    tmp="$(mktemp -d "$cache/.download-XXXXXX")"
    # npm pack checks the tarball against the registry's integrity hash.
    if ! (cd "$tmp" && npm pack --silent "node-linux-$arch@$CI_NODE_VERSION" >/dev/null &&
      tar -xzf node-linux-*.tgz && package/bin/node --version >/dev/null); then
      rm -rf "$tmp"
      echo "Could not install Node.js $CI_NODE_VERSION from the npm registry" >&2
      return 1
    fi
    # Renamed into place whole, so a clone running at the same time never sees half an install.
    mv "$tmp/package" "$dir.$$" && rm -rf "$tmp"
    mv -T "$dir.$$" "$dir" 2>/dev/null || rm -rf "$dir.$$"
  fi
  export PATH="$dir/bin:$PATH"
  # node-gyp finds include/node/*.h there instead of downloading headers (the machine's npmrc may name another).
  export npm_config_nodedir="$dir"
  hash -r
}

ci_node_setup
echo "Node.js $(node --version) at $(command -v node)"
