#!/usr/bin/env bash
# Benchmarks the server against the raw path to the same sandboxes and writes BENCHMARKS.md:
# installs what the local stack needs, brings the stack up (reusing a running one), builds the
# server and the bench tools, and runs bench/cmd/sandbox-bench. Needs root (the stack runs
# a node). The benchmark runs in the stack's network namespace, where pod addresses exist. About 10 minutes per run
# of items 1-7, 9 and 10 on 2 cores with the defaults and a warm stack, and 15-20 more for item 8 (the load, in the
# last run only); -runs 3 took 47 min on 2026-12-04. A cold stack build adds its own time once.
#
#   hack/bench.sh                       every item, default iteration counts
#   hack/bench.sh -runs 3               all items three times: run-to-run min / median / max
#   hack/bench.sh -items 1,5            some items only
#   hack/bench.sh -small-runs 500 ...   any sandbox-bench flag (sandbox-bench -h lists them)
#
# A stack this script started is stopped again at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ "$(id -u)" = 0 ] || { echo "bench: needs root for the local stack (try: sudo -E $0 $*)" >&2; exit 1; }
hack/deps.sh
. hack/localstack/versions.sh
# Item 10's baseline, kubernetes-mcp-server, as its npm package ships it (once per cache).
if command -v npm >/dev/null && [ ! -x "$KMS_BIN" ]; then
  kmsdir=$LOCALSTACK_CACHE/npm/kubernetes-mcp-server-$KMS_VERSION
  mkdir -p "$kmsdir"
  (cd "$kmsdir" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm i --no-audit --no-fund --loglevel=error "kubernetes-mcp-server-linux-amd64@$KMS_VERSION" >/dev/null)
fi
kms=()
[ -x "$KMS_BIN" ] && kms=(-kms "$KMS_BIN" -kms-version "$KMS_VERSION")
was_up=0
hack/localstack/stack.sh status >/dev/null 2>&1 && was_up=1
cleanup() { [ "$was_up" = 1 ] || hack/localstack/stack.sh down >/dev/null 2>&1 || true; }
trap cleanup EXIT
hack/localstack/stack.sh up >/dev/null
mkdir -p bin
# The binary measured is the one that ships: static, built as install.sh and hack/image.sh (ko)
# build it (the default CGO_ENABLED=1 links dynamically here, through kustomize's use of Go's
# plugin package). The baseline server is built the same way so that start-up compares alike.
static() { CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" "$@"; }
static -o bin/k8s-sandbox-mcp .
static -o bin/minimal-mcp ./bench/cmd/minimal-mcp
static -o bin/lean-exec-mcp ./bench/cmd/lean-exec-mcp
go build -o bin/sandbox-bench ./bench/cmd/sandbox-bench
hack/localstack/stack.sh exec bin/sandbox-bench -server bin/k8s-sandbox-mcp -minimal bin/minimal-mcp -lean bin/lean-exec-mcp -out BENCHMARKS.md "${kms[@]}" \
  -command "hack/bench.sh${*:+ $*}" "$@"
