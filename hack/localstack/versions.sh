# Versions of everything the local stack builds; the cache folders are keyed by them.
KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
# agent-sandbox: the stack runs AGENT_SANDBOX_VERSION, by default what users run; hack/test.sh's
# compatibility run brings the same stack up on AGENT_SANDBOX_COMPAT_VERSION
# (LOCALSTACK_AGENT_SANDBOX=v0.5.6 hack/localstack/stack.sh up). Each version claims from its own
# example pools. The default version builds with the stack (build/stack, below); an older one
# from its own module, build/sandbox-<version> (one module cannot hold two versions of
# agent-sandbox), which pins every module it shares with the stack at the stack's version, so
# that a cold build compiles only agent-sandbox's own packages: v0.5.6's code on Kubernetes
# v0.37.2's libraries where its release used v0.36.3's, and controller-runtime v0.24.1 as its
# release did (versions_test.go checks both modules agree).
AGENT_SANDBOX_DEFAULT_VERSION=v1.0.1
AGENT_SANDBOX_COMPAT_VERSION=v0.5.6
AGENT_SANDBOX_VERSION=${LOCALSTACK_AGENT_SANDBOX:-$AGENT_SANDBOX_DEFAULT_VERSION}
GATEWAY_API_VERSION=v1.6.3
LOCALSTACK_CACHE=${K8S_SANDBOX_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-sandbox-mcp}
# The real node (kubelet + containerd + runc), cluster DNS and metrics; images built on the machine.
CONTAINERD_VERSION=v2.4.2
COREDNS_VERSION=v1.12.4
METRICS_SERVER_VERSION=v0.8.0
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
# NetworkPolicy enforcement: kube-router's network policy controller alone (no routing, no
# service proxy), the one maintained engine that runs on this kernel (iptables and ipset;
# kube-network-policies needs nftables' queue statement, which the kernel lacks). v2.1.0 is the
# only version the module proxy serves; the advisories against it are in its service proxy,
# which the stack does not run.
KUBE_ROUTER_VERSION=v2.1.0
# The control plane and the node (Kubernetes, etcd, containerd, CoreDNS, metrics-server,
# kube-router) and the default agent-sandbox build from one module, build/stack, which pins
# every one of them and so holds one version of each dependency they share (client-go, grpc,
# otel...): go's build cache compiles those once for all sixteen binaries, where a module per
# program compiled them once per program (a cold build is the longest part of a cold CI run).
# The module's versions of the modules this repository's own go.mod also requires are the same
# (hack/localstack/versions_test.go checks them, and the versions above), and hack/test.sh
# builds with the stack's settings, so that the tests can reuse what the stack compiled. The
# versions above stamp the binaries and name the images. The binaries' folder is keyed by the
# module (go.mod, go.sum, its own mains of CoreDNS and metrics-server) and by the settings every
# stack binary is built with: one cgo setting and one set of tags (a package built with other
# settings is another entry in go's build cache, compiled again). Static, as upstream's release
# builds are, so they also run inside images; no_btrfs because the btrfs snapshotter needs C
# headers and the node uses overlayfs, urfave_cli_no_docs as containerd's own release build.
STACK_MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/build/stack
STACK_CGO_ENABLED=0
STACK_TAGS="no_btrfs urfave_cli_no_docs"
# build_key <module dir> prints the key of what a build module builds with the stack's settings.
build_key() {
  (cd "$1" && { echo "CGO_ENABLED=$STACK_CGO_ENABLED tags=$STACK_TAGS"; cat go.mod go.sum; find . -name '*.go' | LC_ALL=C sort | xargs -r cat; } | sha256sum | cut -c1-16)
}
STACK_BIN=$LOCALSTACK_CACHE/bin/stack-$KUBE_VERSION-$(build_key "$STACK_MOD")
# sandbox_mod <version> prints the build module of an agent-sandbox version other than the default.
sandbox_mod() { echo "${STACK_MOD%/stack}/sandbox-$1"; }
if [ "$AGENT_SANDBOX_VERSION" = "$AGENT_SANDBOX_DEFAULT_VERSION" ]; then
  SANDBOX_MOD=$STACK_MOD
  SANDBOX_BIN=$STACK_BIN
else
  SANDBOX_MOD=$(sandbox_mod "$AGENT_SANDBOX_VERSION")
  SANDBOX_BIN=$LOCALSTACK_CACHE/bin/agent-sandbox-$AGENT_SANDBOX_VERSION
  # An unsupported version has no module: build.sh says so.
  if [ -f "$SANDBOX_MOD/go.mod" ]; then SANDBOX_BIN+=-$(build_key "$SANDBOX_MOD"); fi
fi
IMAGES_DIR=$LOCALSTACK_CACHE/images
# The server's image is built by ko (hack/image.sh), a daemonless OCI builder for Go, installed
# from the Go module proxy and cached by version like the tools above.
KO_VERSION=v0.19.1
KO=$LOCALSTACK_CACHE/bin/ko-$KO_VERSION/ko
# server_image <repository root> prints the server image's name: deploy/deployment.yaml's, the
# one a release publishes, under which the local stack also loads its own build.
server_image() { awk '$1 == "image:" {print $2; exit}' "$1/deploy/deployment.yaml"; }
# Test tooling: gotestsum runs hack/test.sh's stack packages (hack/deps.sh installs it).
GOTESTSUM_VERSION=v1.13.0
GOTESTSUM=$LOCALSTACK_CACHE/bin/gotestsum-$GOTESTSUM_VERSION/gotestsum
# Helm v4 (hack/helm.sh builds it from the Go module proxy, as go install does gotestsum): the
# chart's unit tests (charts/) template and lint it, internal/e2e installs it on the stack.
HELM_VERSION=v4.3.2
HELM=$LOCALSTACK_CACHE/bin/helm-$HELM_VERSION/helm
# The benchmark's tool-list baseline (hack/bench.sh item 10): kubernetes-mcp-server's binary from npm.
KMS_VERSION=0.0.67
KMS_BIN=$LOCALSTACK_CACHE/npm/kubernetes-mcp-server-$KMS_VERSION/node_modules/kubernetes-mcp-server-linux-amd64/bin/kubernetes-mcp-server-linux-amd64
# The .mcpb bundle's packer and validator (hack/release.sh): @anthropic-ai/mcpb from npm, with
# Node 22, installed by hack/deps.sh.
MCPB_VERSION=2.1.2
MCPB_BIN=$LOCALSTACK_CACHE/npm/mcpb-$MCPB_VERSION/node_modules/.bin
