#!/usr/bin/env bash
# Builds the real control-plane and agent-sandbox binaries into a cache outside the clone,
# keyed by versions, so every clone on this machine shares one build. Skips what exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"

# shellcheck source=buildlib.sh
. "$here/buildlib.sh"

kube=(
  go.etcd.io/etcd/server/v3=etcd
  k8s.io/kubernetes/cmd/kubectl=kubectl
  k8s.io/kubernetes/cmd/kube-apiserver=kube-apiserver
  k8s.io/kubernetes/cmd/kube-controller-manager=kube-controller-manager
  k8s.io/kubernetes/cmd/kubelet=kubelet
  k8s.io/kubernetes/cmd/kube-proxy=kube-proxy
  k8s.io/kubernetes/cmd/kube-scheduler=kube-scheduler
)
sandbox=(
  sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller=agent-sandbox-controller
  sigs.k8s.io/agent-sandbox/packages/sandboxd/cmd/sandboxd=sandboxd
  sigs.k8s.io/agent-sandbox/sandbox-router/cmd=sandbox-router
)
# Every Kubernetes binary in one go build, the node's too, and the default agent-sandbox's with
# them: one package load, and the links overlap the compiles.
if [ "$SANDBOX_MOD" = "$STACK_MOD" ]; then
  stack_build "$(kube_ldflags)" "${kube[@]}" "${sandbox[@]}"
  exit 0
fi
stack_build "$(kube_ldflags)" "${kube[@]}"
[ -f "$SANDBOX_MOD/go.mod" ] || { echo "localstack: error: no build module for agent-sandbox $AGENT_SANDBOX_VERSION ($SANDBOX_MOD); supported: $AGENT_SANDBOX_DEFAULT_VERSION, $AGENT_SANDBOX_COMPAT_VERSION" >&2; exit 1; }
# On the libraries the stack compiled (versions.sh).
BUILD_HINT="cold: under 1 min after the stack" settings_build "$SANDBOX_MOD" "$SANDBOX_BIN" "-s -w" "${sandbox[@]}"
