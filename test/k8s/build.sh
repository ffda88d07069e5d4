#!/usr/bin/env bash
# Builds the parts of Slipway's Kubernetes test cluster from their Go modules, once, into a cache:
#
#   $SLIPWAY_K8S_CACHE (default ~/.cache/slipway-k8s)
#     bin/kube-apiserver            k8s.io/kubernetes/cmd/kube-apiserver (staging modules pinned by replace)
#     bin/kube-controller-manager   k8s.io/kubernetes/cmd/kube-controller-manager (run for its garbage
#                                   collector: claim → sandbox → pod deletion goes through ownerReferences)
#     bin/etcd                      go.etcd.io/etcd/server/v3, the version kubernetes' own go.mod requires
#     bin/agent-sandbox-controller  sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller
#     crds/agent-sandbox/*.yaml     agents.x-k8s.io + extensions.agents.x-k8s.io CRDs from that module
#     manifests/agent-sandbox/*.yaml  its install manifests (namespace, service account, RBAC) from k8s/
#     crds/gateway-api/*.yaml       Gateway API standard channel (sigs.k8s.io/gateway-api config/crd/standard)
#     bin/helm                      helm.sh/helm/v3/cmd/helm (lints, renders and installs charts/slipway)
#     bin/kubeconform               github.com/yannh/kubeconform/cmd/kubeconform (validates rendered objects)
#     crds/prometheus-operator/*.yaml  the ServiceMonitor CRD (github.com/prometheus-operator/prometheus-operator
#                                   example/prometheus-operator-crd), for the chart's optional ServiceMonitor
#     bin/umoci                     github.com/opencontainers/umoci/cmd/umoci (writes OCI image layouts)
#     images/                       the control plane's and the agent's images (images.sh, run last)
#     stamps/<component>            what was built (version + recipe); equal stamp + present output = skip
#     src/<component>/              throwaway Go modules the binaries are built from
#
# Idempotent: a second run with nothing changed only compares stamps and finds the venv (about 1 s).
# Everything comes through the Go module proxy with the ordinary go command, and moto's venv (the
# suites' S3) through pip, made at the end; the suites then run without a network (netns.sh).
# Builds share a 2-core machine: -p=2, GOMAXPROCS=2.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}                    # k8s.io/kubernetes; go.mod says go 1.26.0
AGENT_SANDBOX_VERSION=${AGENT_SANDBOX_VERSION:-v0.5.6} # built against k8s.io/* v0.36.3
GATEWAY_API_VERSION=${GATEWAY_API_VERSION:-v1.6.3}     # v1.7 needs a newer Go than 1.26
HELM_VERSION=${HELM_VERSION:-v3.22.0}
KUBECONFORM_VERSION=${KUBECONFORM_VERSION:-v0.8.0}
PROMETHEUS_OPERATOR_VERSION=${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}
UMOCI_VERSION=${UMOCI_VERSION:-v0.6.0}                 # writes the images' OCI layouts (images.sh)
RECIPE=1                                               # bump when the way something is built changes

CACHE=${SLIPWAY_K8S_CACHE:-$HOME/.cache/slipway-k8s}
mkdir -p "$CACHE/bin" "$CACHE/stamps" "$CACHE/src" "$CACHE/crds"

export GOMAXPROCS=2
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-p=2 -buildvcs=false -trimpath"
export GOTOOLCHAIN=local
export CGO_ENABLED=0

log() { printf '[k8s-build] %s\n' "$*" >&2; }

source "$(dirname "$0")/stamps.sh"

# Directory of a downloaded module in the module cache.
moddir() { go mod download -json "$1@$2" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

# ---------------------------------------------------------------------------------------------
# kube-apiserver + etcd from k8s.io/kubernetes. The kubernetes module points its ~33 staging
# modules (k8s.io/api, k8s.io/apiserver, ...) at ./staging/src/...; those paths do not exist in a
# module download, so the throwaway module replaces each one with its published v0.<minor>.<patch>.
# etcd is built in the same module at the version kubernetes requires (it is already in its graph).
build_kubernetes() {
  local name=kubernetes
  local stamp="kube-apiserver+kube-controller-manager+etcd k8s=$K8S_VERSION recipe=$RECIPE"
  if fresh "$name" "$stamp" "$CACHE/bin/kube-apiserver" "$CACHE/bin/kube-controller-manager" "$CACHE/bin/etcd"; then
    log "kube-apiserver, kube-controller-manager $K8S_VERSION and etcd: cached"
    return
  fi
  local t0 t1 src gomod staging etcd_version minor
  t0=$(now)
  src="$CACHE/src/$name"
  rm -rf "$src" && mkdir -p "$src"
  log "kube-apiserver $K8S_VERSION: reading kubernetes' go.mod"
  gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  staging=$(sed -n 's#^\t\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\1#p' "$gomod")
  [[ -n "$staging" ]] || { log "no staging replaces found in $gomod"; exit 1; }
  etcd_version=$(sed -n 's#^\tgo\.etcd\.io/etcd/server/v3 \(v[0-9.]*\).*#\1#p' "$gomod")
  minor=${K8S_VERSION#v1.}
  {
    echo "module slipway.test/k8s-build"
    echo
    echo "go 1.26.0"
    echo
    echo "godebug default=go1.26"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    local m
    for m in $staging; do echo "	$m => $m v0.$minor"; done
    echo ")"
  } >"$src/go.mod"
  log "kube-apiserver: $(wc -w <<<"$staging") staging modules pinned at v0.$minor; etcd $etcd_version"
  (
    cd "$src"
    go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" "k8s.io/kubernetes/cmd/kube-controller-manager@$K8S_VERSION" \
      "go.etcd.io/etcd/server/v3@$etcd_version"
    local vpkg=k8s.io/component-base/version
    local ld="-s -w -X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${minor%%.*}"
    ld+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
    t1=$(now)
    go build -ldflags "$ld" -o "$CACHE/bin/kube-apiserver.new" k8s.io/kubernetes/cmd/kube-apiserver
    log "kube-apiserver: compiled in $(took "$t1")"
    t1=$(now)
    go build -ldflags "$ld" -o "$CACHE/bin/kube-controller-manager.new" k8s.io/kubernetes/cmd/kube-controller-manager
    log "kube-controller-manager: compiled in $(took "$t1")"
    t1=$(now)
    go build -ldflags "-s -w" -o "$CACHE/bin/etcd.new" go.etcd.io/etcd/server/v3
    log "etcd $etcd_version: compiled in $(took "$t1")"
  )
  mv "$CACHE/bin/kube-apiserver.new" "$CACHE/bin/kube-apiserver"
  mv "$CACHE/bin/kube-controller-manager.new" "$CACHE/bin/kube-controller-manager"
  mv "$CACHE/bin/etcd.new" "$CACHE/bin/etcd"
  stamp "$name" "$stamp"
  log "kube-apiserver + kube-controller-manager $K8S_VERSION + etcd $etcd_version: built in $(took "$t0")"
}

# ---------------------------------------------------------------------------------------------
# agent-sandbox controller + CRDs from sigs.k8s.io/agent-sandbox. The proxy refuses the module's
# version list, but serves the exact version, so it is always named exactly.
build_agent_sandbox() {
  local name=agent-sandbox
  local stamp="agent-sandbox=$AGENT_SANDBOX_VERSION recipe=$RECIPE"
  if fresh "$name" "$stamp" "$CACHE/bin/agent-sandbox-controller" "$CACHE/crds/agent-sandbox" \
    "$CACHE/manifests/agent-sandbox"; then
    log "agent-sandbox $AGENT_SANDBOX_VERSION: cached"
    return
  fi
  local t0 src dir
  t0=$(now)
  src="$CACHE/src/$name"
  rm -rf "$src" && mkdir -p "$src"
  dir=$(moddir sigs.k8s.io/agent-sandbox "$AGENT_SANDBOX_VERSION")
  printf 'module slipway.test/agent-sandbox-build\n\ngo 1.26.0\n\nrequire sigs.k8s.io/agent-sandbox %s\n' \
    "$AGENT_SANDBOX_VERSION" >"$src/go.mod"
  (
    cd "$src"
    go get "sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller@$AGENT_SANDBOX_VERSION"
    go build -ldflags "-s -w" -o "$CACHE/bin/agent-sandbox-controller.new" \
      sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller
  )
  rm -rf "$CACHE/crds/agent-sandbox.new" && mkdir -p "$CACHE/crds/agent-sandbox.new"
  cp "$dir"/k8s/crds/*.yaml "$CACHE/crds/agent-sandbox.new/"
  chmod -R u+w "$CACHE/crds/agent-sandbox.new"
  rm -rf "$CACHE/crds/agent-sandbox" && mv "$CACHE/crds/agent-sandbox.new" "$CACHE/crds/agent-sandbox"
  # The controller's own identity and RBAC, as upstream installs it (the harness applies the
  # Namespace, ServiceAccount, ClusterRole/Binding and Role/Binding objects, not the Deployment).
  mkdir -p "$CACHE/manifests" && rm -rf "$CACHE/manifests/agent-sandbox.new"
  mkdir -p "$CACHE/manifests/agent-sandbox.new"
  cp "$dir"/k8s/{controller,extensions,rbac.generated,extensions-rbac.generated}.yaml \
    "$CACHE/manifests/agent-sandbox.new/"
  chmod -R u+w "$CACHE/manifests/agent-sandbox.new"
  rm -rf "$CACHE/manifests/agent-sandbox"
  mv "$CACHE/manifests/agent-sandbox.new" "$CACHE/manifests/agent-sandbox"
  mv "$CACHE/bin/agent-sandbox-controller.new" "$CACHE/bin/agent-sandbox-controller"
  stamp "$name" "$stamp"
  log "agent-sandbox $AGENT_SANDBOX_VERSION: controller + $(ls "$CACHE/crds/agent-sandbox" | wc -l) CRDs in $(took "$t0")"
}

# ---------------------------------------------------------------------------------------------
# Gateway API standard-channel CRDs (plus its safe-upgrades ValidatingAdmissionPolicy) from the module.
build_gateway_api() {
  local name=gateway-api
  local stamp="gateway-api=$GATEWAY_API_VERSION channel=standard recipe=$RECIPE"
  if fresh "$name" "$stamp" "$CACHE/crds/gateway-api"; then
    log "gateway-api $GATEWAY_API_VERSION CRDs: cached"
    return
  fi
  local t0 dir
  t0=$(now)
  dir=$(moddir sigs.k8s.io/gateway-api "$GATEWAY_API_VERSION")
  rm -rf "$CACHE/crds/gateway-api.new" && mkdir -p "$CACHE/crds/gateway-api.new"
  cp "$dir"/config/crd/standard/*.yaml "$CACHE/crds/gateway-api.new/"
  chmod -R u+w "$CACHE/crds/gateway-api.new"
  rm -rf "$CACHE/crds/gateway-api" && mv "$CACHE/crds/gateway-api.new" "$CACHE/crds/gateway-api"
  stamp "$name" "$stamp"
  log "gateway-api $GATEWAY_API_VERSION: $(ls "$CACHE/crds/gateway-api" | wc -l) files in $(took "$t0")"
}

# ---------------------------------------------------------------------------------------------
# Chart tools: helm and kubeconform, each a plain `go build` of its command in a throwaway module.
# build_tool NAME MODULE VERSION PACKAGE LDFLAGS
build_tool() {
  local name=$1 module=$2 version=$3 pkg=$4 ld=$5
  local stamp="$name=$version recipe=$RECIPE"
  if fresh "$name" "$stamp" "$CACHE/bin/$name"; then
    log "$name $version: cached"
    return
  fi
  local t0 src
  t0=$(now)
  src="$CACHE/src/$name"
  rm -rf "$src" && mkdir -p "$src"
  printf 'module slipway.test/%s-build\n\ngo 1.26.0\n\nrequire %s %s\n' "$name" "$module" "$version" >"$src/go.mod"
  (
    cd "$src"
    go get "$pkg@$version"
    go build -ldflags "-s -w $ld" -o "$CACHE/bin/$name.new" "$pkg"
  )
  mv "$CACHE/bin/$name.new" "$CACHE/bin/$name"
  stamp "$name" "$stamp"
  log "$name $version: built in $(took "$t0")"
}

# The ServiceMonitor CRD only (the chart suite installs it to render and apply the chart's
# optional ServiceMonitor); nothing of the operator is built.
build_servicemonitor_crd() {
  local name=prometheus-operator
  local stamp="prometheus-operator=$PROMETHEUS_OPERATOR_VERSION crds=servicemonitors recipe=$RECIPE"
  if fresh "$name" "$stamp" "$CACHE/crds/prometheus-operator"; then
    log "prometheus-operator $PROMETHEUS_OPERATOR_VERSION ServiceMonitor CRD: cached"
    return
  fi
  local t0 dir
  t0=$(now)
  dir=$(moddir github.com/prometheus-operator/prometheus-operator "$PROMETHEUS_OPERATOR_VERSION")
  rm -rf "$CACHE/crds/prometheus-operator.new" && mkdir -p "$CACHE/crds/prometheus-operator.new"
  cp "$dir"/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml \
    "$CACHE/crds/prometheus-operator.new/"
  chmod -R u+w "$CACHE/crds/prometheus-operator.new"
  rm -rf "$CACHE/crds/prometheus-operator"
  mv "$CACHE/crds/prometheus-operator.new" "$CACHE/crds/prometheus-operator"
  stamp "$name" "$stamp"
  log "prometheus-operator $PROMETHEUS_OPERATOR_VERSION: ServiceMonitor CRD in $(took "$t0")"
}

# helm's Makefile stamps the Kubernetes version of its client-go into the binary: the default
# .Capabilities.KubeVersion of `helm template` and `helm lint` (else v1.20, older than the chart allows).
helm_ld() {
  local gomod minor
  gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  minor=$(sed -n 's#^\tk8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$gomod")
  [[ -n "$minor" ]] || { log "no k8s.io/client-go version in $gomod"; exit 1; }
  local v=helm.sh/helm/v3
  local ld="-X $v/internal/version.version=$HELM_VERSION -X $v/internal/version.gitTreeState=clean"
  ld+=" -X $v/pkg/lint/rules.k8sVersionMajor=1 -X $v/pkg/lint/rules.k8sVersionMinor=$minor"
  ld+=" -X $v/pkg/chartutil.k8sVersionMajor=1 -X $v/pkg/chartutil.k8sVersionMinor=$minor"
  printf '%s' "$ld"
}

T0=$(now)
if fresh helm "helm=$HELM_VERSION recipe=$RECIPE" "$CACHE/bin/helm"; then
  log "helm $HELM_VERSION: cached"
else
  build_tool helm helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm "$(helm_ld)"
fi
build_tool kubeconform github.com/yannh/kubeconform "$KUBECONFORM_VERSION" \
  github.com/yannh/kubeconform/cmd/kubeconform "-X main.version=$KUBECONFORM_VERSION"
build_tool umoci github.com/opencontainers/umoci "$UMOCI_VERSION" \
  github.com/opencontainers/umoci/cmd/umoci ""
build_gateway_api
build_servicemonitor_crd
build_agent_sandbox
build_kubernetes
# moto (the suites' S3) from the Python package index, as `npm test` makes it: the suites run
# without a network (netns.sh), so its venv is made here, outside (test/support/moto-venv.ts).
(cd "$(dirname "$0")/../.." &&
  node --import tsx --input-type=module \
    -e "await (await import('./test/support/moto-venv.ts')).motoPython()")
bash "$(dirname "$0")/images.sh"
log "all parts ready in $CACHE ($(took "$T0"))"
