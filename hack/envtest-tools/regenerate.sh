#!/usr/bin/env bash
# Rewrites this tools module's go.mod for another Kubernetes release:
#   hack/envtest-tools/regenerate.sh v1.37.2
# k8s.io/kubernetes points every k8s.io/<staging> module at ./staging, which its
# module zip lacks, so each one is replaced with its published v0.<minor>.<patch>.
set -euo pipefail
version=${1:?usage: regenerate.sh v1.X.Y}
staging_version=v0.${version#v1.}
cd "$(dirname "${BASH_SOURCE[0]}")"
k8s_mod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
{
  printf 'module github.com/leaninformer/leaninformer/hack/envtest-tools\n\ngo 1.26.0\n\n'
  printf 'tool (\n\tgo.etcd.io/etcd/server/v3\n\tk8s.io/kubernetes/cmd/kube-apiserver\n)\n\n'
  printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "$version"
  sed -n '/^replace (/,/^)/p' "$k8s_mod" | awk -v v="$staging_version" '$2 == "=>" {printf "\t%s => %s %s\n", $1, $1, v}'
  printf ')\n'
} > go.mod
rm -f go.sum
go mod tidy
