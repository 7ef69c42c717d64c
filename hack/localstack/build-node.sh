#!/usr/bin/env bash
# Builds the real node's binaries into $NODE_BIN, a cache outside the clone keyed by versions
# (kubelet, kube-proxy and kube-scheduler, containerd with ctr and the runc shim, CoreDNS, metrics-server;
# kube-router in its own folder, $KUBE_ROUTER_BIN), and
# installs the Debian packages the node runs with (runc, CNI plugins, iptables: hack/deps.sh node).
# Every binary comes from a nested module under build/ that pins it. Skips what exists.
# Not run by hack/test.sh or build.sh yet: nothing uses the node until the stack runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=buildlib.sh
. "$here/buildlib.sh"

"$here/../deps.sh" node

# Static (CGO_ENABLED=0) as upstream's release builds them, so they also run inside images.
# no_btrfs: the btrfs snapshotter needs C headers and the node uses overlayfs;
# urfave_cli_no_docs and the shim's no_grpc are upstream's own tags.
cdpkg=github.com/containerd/containerd/v2
cdflags="-s -w -X $cdpkg/version.Version=$CONTAINERD_VERSION"
CGO_ENABLED=0 BUILD_TAGS="no_btrfs urfave_cli_no_docs" BUILD_HINT="cold: about 2 min" \
  build "$here/build/containerd" "$NODE_BIN" "$cdflags" \
  "$cdpkg/cmd/containerd=containerd" \
  "$cdpkg/cmd/ctr=ctr"
CGO_ENABLED=0 BUILD_TAGS="no_btrfs urfave_cli_no_docs no_grpc" BUILD_HINT="cold: about 1 min" \
  build "$here/build/containerd" "$NODE_BIN" "$cdflags" \
  "$cdpkg/cmd/containerd-shim-runc-v2=containerd-shim-runc-v2"

# CoreDNS's version is a constant of its source; its Makefile stamps only the git commit,
# which a module zip does not carry.
CGO_ENABLED=0 BUILD_HINT="cold: a few minutes" \
  build "$here/build/coredns" "$NODE_BIN" "-s -w" \
  github.com/coredns/coredns=coredns

CGO_ENABLED=0 BUILD_HINT="cold: a few minutes" \
  build "$here/build/metrics-server" "$NODE_BIN" "-s -w -X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION" \
  sigs.k8s.io/metrics-server/cmd/metrics-server=metrics-server

CGO_ENABLED=0 BUILD_HINT="cold: about 4 min" \
  build "$here/build/kube-router" "$KUBE_ROUTER_BIN" "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
  github.com/cloudnativelabs/kube-router/v2/cmd/kube-router=kube-router

# Built like the control plane (same module, flags and cgo setting as build.sh), so the
# packages they share with kube-apiserver come from go's build cache.
BUILD_HINT="cold: kubelet about 15 min on 2 cores, less after build.sh" \
  build "$here/build/kube" "$NODE_BIN" "$(kube_ldflags)" \
  k8s.io/kubernetes/cmd/kubelet=kubelet \
  k8s.io/kubernetes/cmd/kube-proxy=kube-proxy \
  k8s.io/kubernetes/cmd/kube-scheduler=kube-scheduler
