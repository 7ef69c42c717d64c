#!/usr/bin/env bash
# Helm at the version localstack/versions.sh pins, built once from the Go module proxy into the
# stack's cache (keyed by the version) with go install, which builds it with Helm's own go.mod:
# neither this repository's go.mod nor the stack module's versions move for it.
#   hack/helm.sh ARGS...    runs helm
#   hack/helm.sh --path     installs it if needed and prints the binary's path (the tests use it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/localstack/versions.sh"
if [ ! -x "$HELM" ]; then
  echo "helm.sh: installing helm $HELM_VERSION" >&2
  # Static, as upstream's release builds are.
  GOBIN=$(dirname "$HELM") CGO_ENABLED=0 go install -trimpath "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" >&2
fi
if [ "${1:-}" = --path ]; then
  echo "$HELM"
  exit 0
fi
exec "$HELM" "$@"
