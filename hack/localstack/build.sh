#!/usr/bin/env bash
# Builds the real control-plane and agent-sandbox binaries into a cache outside the clone,
# keyed by versions, so every clone on this machine shares one build. Skips what exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"

build() { # build <module dir> <out dir> <ldflags> <pkg=name>...
  local mod=$1 out=$2 ldflags=$3; shift 3
  local todo=() names=()
  for spec in "$@"; do
    local pkg=${spec%%=*} name=${spec##*=}
    [ -x "$out/$name" ] && continue
    todo+=("$pkg"); names+=("$name")
  done
  [ ${#todo[@]} -eq 0 ] && return 0
  mkdir -p "$out"
  local tmp; tmp=$(mktemp -d "$out/.build.XXXXXX")
  echo "localstack: building ${names[*]} (cold: up to ~20 min on 2 cores)" >&2
  local start=$SECONDS
  for i in "${!todo[@]}"; do
    (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$tmp/${names[$i]}" "${todo[$i]}")
    mv "$tmp/${names[$i]}" "$out/${names[$i]}"
    echo "localstack: built ${names[$i]} ($((SECONDS - start))s)" >&2
  done
  rmdir "$tmp" 2>/dev/null || true
}

kv=$KUBE_VERSION
kldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kldflags+=" -X $p.gitVersion=$kv -X $p.gitMajor=${kv#v} -X $p.gitMinor=$(echo "$kv" | cut -d. -f2) -X $p.gitTreeState=clean"
done
kldflags=$(echo "$kldflags" | sed -E "s/gitMajor=([0-9]+)\.[^ ]*/gitMajor=\1/")

build "$here/build/kube" "$KUBE_BIN" "$kldflags" \
  go.etcd.io/etcd/server/v3=etcd \
  k8s.io/kubernetes/cmd/kubectl=kubectl \
  k8s.io/kubernetes/cmd/kube-apiserver=kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager=kube-controller-manager

build "$here/build/sandbox" "$SANDBOX_BIN" "-s -w" \
  sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller=agent-sandbox-controller \
  sigs.k8s.io/agent-sandbox/packages/sandboxd/cmd/sandboxd=sandboxd \
  sigs.k8s.io/agent-sandbox/sandbox-router/cmd=sandbox-router
