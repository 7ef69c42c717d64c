#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine with Go: Debian packages for the
# stack and its node, and pinned Node 22 + MCP Inspector CLI and MCP conformance suite under the cache.
# Idempotent and quiet when everything is there.
# `deps.sh node` installs only what the real node runs with (hack/localstack/build-node.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/localstack/versions.sh"

# apt_missing <package>... installs the packages that are not installed yet.
apt_missing() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if [ "${1:-}" = node ]; then
  # The node's runtime (runc), pod networking (CNI bridge, host-local, loopback plugins under
  # /usr/lib/cni; ip for the stack's network namespace; nsenter; socat bridges the API server into it), kube-proxy's
  # rules and kube-router's NetworkPolicy rules (iptables, ipset).
  apt_missing runc containernetworking-plugins iproute2 util-linux mount iptables nftables socat ipset
  exit 0
fi

# python3: conn's quoting test compares with the real shlex.split. The images bring their own
# (hack/localstack/images.sh downloads Debian packages for them).
apt_missing python3 openssl curl util-linux procps
"$0" node

# npm_pin <folder> <binary> <package@version>: installs the package with Node 22 into its own
# folder under the cache, once (the folder is keyed by the version), unless npm is missing.
npm_pin() {
  local dir=$LOCALSTACK_CACHE/npm/$1 bin=$2 pkg=$3
  command -v npm >/dev/null && [ ! -x "$dir/node_modules/.bin/$bin" ] || return 0
  echo "deps: installing $pkg with node@$NODE_VERSION" >&2
  mkdir -p "$dir"
  (cd "$dir" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm i --no-audit --no-fund --loglevel=error "node@$NODE_VERSION" "$pkg" >/dev/null)
}

# The Inspector CLI needs Node >= 22.19; the machine's Node may be older, so take Node 22
# from the npm registry too. Pinned versions, installed once per cache.
INSPECTOR_VERSION=2.12.0
NODE_VERSION=22
npm_pin "inspector-$INSPECTOR_VERSION" mcp-inspector "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"

# The official MCP conformance suite, for its server scenarios (internal/e2e's TestConformance,
# which reads the version here). It needs Node >= 22 as well (fs.globSync).
CONFORMANCE_VERSION=0.1.16
npm_pin "conformance-$CONFORMANCE_VERSION" conformance "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"

# The .mcpb bundle's packer and validator (hack/release.sh and its test in internal/release).
npm_pin "mcpb-$MCPB_VERSION" mcpb "@anthropic-ai/mcpb@$MCPB_VERSION"

# gotestsum (what Kubernetes' own hack/make-rules/test.sh runs go test through) keeps each
# test's events in a JSON file, from which hack/test.sh reports the slowest tests of a run.
if [ ! -x "$GOTESTSUM" ]; then
  echo "deps: installing gotestsum $GOTESTSUM_VERSION" >&2
  GOBIN=$(dirname "$GOTESTSUM") go install "gotest.tools/gotestsum@$GOTESTSUM_VERSION"
fi

# Helm v4 for the chart's tests (charts/, internal/e2e's TestHelmChart).
"$here/helm.sh" --path >/dev/null
# ko builds the server's image (hack/image.sh, which installs it the same way when missing): here
# so that tests run in the stack's network namespace, which reaches no module proxy, find it.
if [ ! -x "$KO" ]; then
  echo "deps: installing ko $KO_VERSION" >&2
  GOBIN=$(dirname "$KO") CGO_ENABLED=0 go install -trimpath "github.com/google/ko@$KO_VERSION"
fi
