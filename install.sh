#!/usr/bin/env bash
# Builds and installs k8s-sandbox-mcp, then prints a ready Claude Desktop entry with absolute
# paths (Claude Desktop starts servers with a minimal environment and an unknown directory).
# Usage: ./install.sh [PREFIX]   (default: $GOBIN, else $(go env GOPATH)/bin)
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-$(go env GOBIN)}
[ -n "$prefix" ] || prefix=$(go env GOPATH)/bin
mkdir -p "$prefix"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$prefix/k8s-sandbox-mcp" .)
bin=$(cd "$prefix" && pwd)/k8s-sandbox-mcp
kubeconfig=${KUBECONFIG:-$HOME/.kube/config}
kubeconfig=${kubeconfig%%:*}
echo "installed $bin ($("$bin" --version))" >&2
cat <<JSON
Add this to claude_desktop_config.json ("mcpServers"), then restart Claude Desktop.
Pick the connection type that fits your cluster (see README "Configuration"):
{
  "mcpServers": {
    "k8s-sandbox": {
      "command": "$bin",
      "args": ["--kubeconfig", "$kubeconfig"],
      "env": {
        "K8S_SANDBOX_CONNECTION__TYPE": "gateway",
        "K8S_SANDBOX_CONNECTION__GATEWAY_NAME": "external-http-gateway"
      }
    }
  }
}
JSON
