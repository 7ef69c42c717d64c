#!/usr/bin/env bash
# Builds the real node's binaries that are not Kubernetes' own (build.sh builds the kubelet,
# kube-proxy and kube-scheduler with the control plane) into $STACK_BIN: containerd with ctr
# and the runc shim, CoreDNS, metrics-server and kube-router, all from build/stack; and
# installs the Debian packages the node runs with (runc, CNI plugins, iptables: hack/deps.sh
# node). Skips what exists. After build.sh, most of what they import is in go's build cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=buildlib.sh
. "$here/buildlib.sh"

"$here/../deps.sh" node

# A build per program: their -X stamps differ.
cdpkg=github.com/containerd/containerd/v2
BUILD_HINT="cold: about 2 min" stack_build "-s -w -X $cdpkg/version.Version=$CONTAINERD_VERSION" \
  "$cdpkg/cmd/containerd=containerd" \
  "$cdpkg/cmd/ctr=ctr"
# The shim's no_grpc is upstream's own tag.
BUILD_HINT="cold: about 1 min" STACK_EXTRA_TAGS=no_grpc stack_build "-s -w -X $cdpkg/version.Version=$CONTAINERD_VERSION" \
  "$cdpkg/cmd/containerd-shim-runc-v2=containerd-shim-runc-v2"
# CoreDNS from the stack module's own main, with the plugins the Corefile uses (coredns/main.go).
# Its version is a constant of its source; its Makefile stamps only the git commit, which a
# module zip does not carry.
BUILD_HINT="cold: under 1 min" stack_build "-s -w" \
  ./coredns=coredns
# metrics-server from the stack module's own main too (metrics-server/main.go says why), stamped
# as upstream's Makefile does.
BUILD_HINT="cold: under 1 min" stack_build "-s -w -X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION" \
  ./metrics-server=metrics-server
# kube-router from the stack module's own main as well: its network policy controller alone, its
# full syncs bounded in frequency (kube-router/main.go's minSyncInterval, and why).
BUILD_HINT="cold: about 1 min" stack_build "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
  ./kube-router=kube-router
