#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that envtest needs from the Go
# module proxy (release binaries cannot be downloaded here) and caches them in
# bin/k8s/<version>/. Prints that folder on stdout; progress goes to stderr.
#
# Idempotent: when both cached binaries exist and answer --version with the
# versions pinned in hack/envtest-tools/go.mod, nothing is built. The folder is
# named by the Kubernetes version only, so an etcd bump alone rebuilds etcd in it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/hack/envtest-tools"
# The versions come from the tools module, so this script and go.mod cannot disagree.
k8s_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$tools/go.mod")
etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "$tools/go.mod")
[ -n "$k8s_version" ] && [ -n "$etcd_version" ] || {
  echo "envtest-binaries: cannot read the Kubernetes or etcd version from $tools/go.mod" >&2; exit 1
}
out=${ENVTEST_BIN_DIR:-$root/bin/k8s/$k8s_version}

log() { echo "envtest-binaries: $*" >&2; }

# version_of prints what a binary says of its version. The output is read in
# full before it is matched: piping it into `grep -q`, which exits at the first
# match, can kill the binary with SIGPIPE while it writes its next line, and
# with pipefail a good binary then looks broken (etcd prints four lines; this
# failed about 1 run in 70, once in CI).
version_of() {
  [ -x "$1" ] && "$1" --version 2>/dev/null
}
apiserver_ok() {
  local v
  v=$(version_of "$out/kube-apiserver") && [ "$(head -n 1 <<<"$v")" = "Kubernetes $k8s_version" ]
}
etcd_ok() {
  local v
  v=$(version_of "$out/etcd") && [ "$(head -n 1 <<<"$v")" = "etcd Version: ${etcd_version#v}" ]
}

mkdir -p "$out"
cd "$tools"

if etcd_ok; then
  log "reusing $out/etcd"
else
  log "building etcd $etcd_version (from go.etcd.io/etcd/server/v3) ..."
  go build -trimpath -buildvcs=false -o "$out/etcd.partial" go.etcd.io/etcd/server/v3
  mv "$out/etcd.partial" "$out/etcd"
  etcd_ok || { log "built etcd does not report ${etcd_version#v}"; exit 1; }
fi

if apiserver_ok; then
  log "reusing $out/kube-apiserver"
else
  # Without these the API server's /version reports v0.0.0, which clients
  # (and discovery-based feature checks) would take for an ancient server.
  minor=${k8s_version#v1.}; minor=${minor%%.*}
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  log "building kube-apiserver $k8s_version (several minutes on 2 cores the first time: docs/usage.md says how many) ..."
  go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out/kube-apiserver.partial" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$out/kube-apiserver.partial" "$out/kube-apiserver"
  apiserver_ok || { log "built kube-apiserver does not report $k8s_version"; exit 1; }
fi

log "ready: $(version_of "$out/kube-apiserver"), $(head -n 1 <<<"$(version_of "$out/etcd")")"
echo "$out"
