#!/usr/bin/env bash
# One command to try the server on one machine: builds the local agent-sandbox stack (cached),
# brings it up, builds the server and serves it over HTTP on loopback, connected to the stack.
# Sandboxes are runc containers on the stack's node. The server runs in the stack's network
# namespace (pod addresses exist only there); a loopback bridge gives the host its address.
# Usage: [MCP_ADDR=host:port] hack/dev.sh [CONNECTION_TYPE]
#   CONNECTION_TYPE: sandboxd-in-cluster (default), gateway, direct, in-cluster
#   MCP_ADDR: where to serve (default 127.0.0.1:8000)
# Stop with Ctrl-C; `hack/localstack/stack.sh down` stops the stack.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
type=${1:-sandboxd-in-cluster}
# Not a K8S_SANDBOX_ name: the server warns about every K8S_SANDBOX_* variable it does not know.
addr=${MCP_ADDR:-127.0.0.1:8000}
hack/deps.sh
hack/localstack/stack.sh up >&2
# The static binary, built as install.sh and hack/image.sh (ko, .ko.yaml) build it.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/k8s-sandbox-mcp .
. hack/localstack/versions.sh
export KUBECONFIG=$LOCALSTACK_CACHE/run/kubeconfig K8S_SANDBOX_DNS_SERVER=10.96.0.10:53
export K8S_SANDBOX_CONNECTION__TYPE=$type
pool=python-pool
case $type in
  gateway) export K8S_SANDBOX_CONNECTION__GATEWAY_NAME=sandbox-gateway ;;
  direct) export K8S_SANDBOX_CONNECTION__API_URL=http://127.0.0.254:80 ;;
  in-cluster) export K8S_SANDBOX_CONNECTION__USE_POD_IP=true ;;
  sandboxd-in-cluster) export K8S_SANDBOX_CONNECTION__MODE=in-cluster-pod-ip; pool=sandboxd-pool ;;
  *) echo "unknown connection type $type" >&2; exit 2 ;;
esac
# Dev mode serves behind a bearer token it makes here, as production would: the sandboxes then
# belong to the token's principal, not to an MCP session, so they carry over from one client
# run to the next (each Inspector CLI command is a session of its own, whose end would delete an
# anonymous session's sandboxes). MCP_TOKEN keeps one across restarts.
token=${MCP_TOKEN:-$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')}
export K8S_SANDBOX_AUTH__TOKENS="dev:$token"
auth="Authorization: Bearer $token"
# hack/deps.sh installs the Inspector CLI with its own Node 22 under the cache, not on PATH:
# the commands run it from there, with that Node first on PATH.
inspector_bin=$(ls -d "$LOCALSTACK_CACHE"/npm/inspector-*/node_modules/.bin 2>/dev/null | sort -V | tail -n 1)
if [ -n "$inspector_bin" ]; then
  inspector=$(cat <<CMDS
    i() { PATH="$inspector_bin:\$PATH" mcp-inspector --cli http://$addr/mcp --transport http --header "$auth" --format json -q "\$@"; }
    i --method tools/list
    claim=\$(i --method tools/call --tool-name create_sandbox --tool-arg warmpool=$pool | sed -n 's/.*"sandbox_claim_name": *"\([^"]*\)".*/\1/p' | head -n 1)
    i --method tools/call --tool-name execute_command --tool-arg sandbox_claim_name=\$claim --tool-arg 'command=echo hello from \$(hostname)'
    i --method tools/call --tool-name delete_sandbox --tool-arg sandbox_claim_name=\$claim
CMDS
)
else
  inspector="    (not installed: hack/deps.sh installs it when npm is available)"
fi
cat >&2 <<MSG

k8s-sandbox-mcp ($type) at http://$addr/mcp  — warm pool "$pool" in namespace "default",
behind the bearer token $token (principal "dev"; MCP_TOKEN=... keeps it across restarts).
  Claude Code:  claude mcp add --transport http k8s-sandbox http://$addr/mcp --header "$auth"
  Inspector CLI (bash; each command its own session, the sandbox carries over):
$inspector
  stdio (Claude Desktop "mcpServers" entry):
    {"k8s-sandbox": {"command": "nsenter", "args": ["--net=/run/netns/k8s-sandbox-mcp", "--", "$root/bin/k8s-sandbox-mcp", "--kubeconfig", "$KUBECONFIG"],
      "env": {"K8S_SANDBOX_CONNECTION__TYPE": "$type"$(env | grep -E '^K8S_SANDBOX_(CONNECTION__[A-Z_]+|DNS_SERVER)=' | grep -v __TYPE= | sed -E 's/^([^=]+)=(.*)$/, "\1": "\2"/' | tr -d '\n')}}}
MSG
# The stack scripts' own settings are not the server's (it would warn that they are unknown).
unset K8S_SANDBOX_MCP_CACHE K8S_SANDBOX_MCP_ADDR
# The host's $addr, one socat per connection into the netns where the server listens.
netns=/run/netns/k8s-sandbox-mcp
socat TCP-LISTEN:"${addr##*:}",bind="${addr%:*}",fork,reuseaddr \
  EXEC:"nsenter --net=$netns -- socat STDIO TCP\:${addr%:*}\:${addr##*:}" &
bridge=$!
trap 'kill $bridge 2>/dev/null' EXIT
nsenter --net="$netns" -- bin/k8s-sandbox-mcp --http "$addr" --kubeconfig "$KUBECONFIG"
