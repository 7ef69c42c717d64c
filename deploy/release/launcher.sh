#!/bin/sh
# The .mcpb bundle's entry point on macOS and Linux (server/k8s-sandbox-mcp): the manifest's
# platform_overrides key on the OS alone, so this picks the binary for the machine's CPU among
# the bundle's server/<os>-<arch>/ and replaces itself with it (exec: the host's stdio and
# signals go straight to the server). Windows runs its .exe directly (the manifest's win32 override).
dir=$(dirname "$0")
case $(uname -s) in
Darwin) os=darwin ;;
Linux) os=linux ;;
*) echo "k8s-sandbox-mcp: this bundle has no binary for $(uname -s)" >&2; exit 1 ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
arm64 | aarch64) arch=arm64 ;;
*) echo "k8s-sandbox-mcp: this bundle has no binary for $(uname -m)" >&2; exit 1 ;;
esac
bin=$dir/$os-$arch/k8s-sandbox-mcp
if [ ! -x "$bin" ]; then
  echo "k8s-sandbox-mcp: this bundle has no binary for $os-$arch ($bin)" >&2
  exit 1
fi
exec "$bin" "$@"
