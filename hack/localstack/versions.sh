# Versions of everything the local stack builds; the cache folders are keyed by them.
KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
AGENT_SANDBOX_VERSION=v0.5.6
GATEWAY_API_VERSION=v1.6.3
LOCALSTACK_CACHE=${K8S_SANDBOX_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-sandbox-mcp}
KUBE_BIN=$LOCALSTACK_CACHE/bin/kube-$KUBE_VERSION-etcd-$ETCD_VERSION
SANDBOX_BIN=$LOCALSTACK_CACHE/bin/agent-sandbox-$AGENT_SANDBOX_VERSION
# The real node (kubelet + containerd + runc), cluster DNS and metrics; images built on the machine.
CONTAINERD_VERSION=v2.4.2
COREDNS_VERSION=v1.12.4
METRICS_SERVER_VERSION=v0.8.0
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
NODE_BIN=$LOCALSTACK_CACHE/bin/node-$KUBE_VERSION-containerd-$CONTAINERD_VERSION-coredns-$COREDNS_VERSION-metrics-$METRICS_SERVER_VERSION
IMAGES_DIR=$LOCALSTACK_CACHE/images
