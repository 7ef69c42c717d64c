#!/usr/bin/env bash
# The local agent-sandbox stack: real etcd, kube-apiserver, kube-controller-manager, the real
# agent-sandbox controller and sandbox-router, and our node agent (hack/localstack/agent) that
# plays kubelet with host processes. Loopback only. A development stack, NOT a security
# boundary: sandbox commands are plain host processes under an unprivileged uid.
#
#   stack.sh up      start (idempotent: an already healthy stack is reused); prints the env
#   stack.sh down    stop exactly the processes `up` started (by PID) and their sandboxes
#   stack.sh status  health of each component
#   stack.sh env     shell exports for the stack (KUBECONFIG and K8S_SANDBOX_* settings)
#   stack.sh apiserver-stop|apiserver-start   stop/restart kube-apiserver alone (for tests)
#
# State lives in $LOCALSTACK_CACHE/run (shared by every clone on the machine; fixed loopback
# ports, so one stack per machine). Needs root: sandboxes run under per-pod uids.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

preflight() {
  [ "$(id -u)" = 0 ] || die "needs root: the node agent runs each sandbox under its own uid and mounts its /app"
  local tool
  for tool in go openssl curl flock setsid unshare setpriv mount; do
    command -v "$tool" >/dev/null || die "missing $tool"
  done
  /usr/bin/python3 -c 'import fastapi, uvicorn, multipart' 2>/dev/null ||
    die "the python runtime needs: apt-get install python3-fastapi python3-uvicorn python3-multipart"
}

start_apiserver() {
  start kube-apiserver "$KUBE_BIN/kube-apiserver" --etcd-servers="$ETCD_URL" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=16443 \
    --endpoint-reconciler-type=none --cert-dir="$PKI" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --service-cluster-ip-range=10.96.0.0/16 \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --authorization-mode=Node,RBAC --profiling=false --v=0
}

cmd_up() {
  local t0=$SECONDS
  mkdir -p "$RUN" "$PIDS" "$LOGS"
  exec 9>"$RUN/stack.lock"
  flock 9
  preflight
  "$here/build.sh"
  # A test stopped the apiserver on purpose (apiserver-stop): wait for it to come back
  # rather than rebuild a stack other tests are using.
  local until=$((SECONDS + 120))
  while [ -f "$RUN/apiserver-stopped" ] && [ $SECONDS -lt $until ]; do sleep 0.5; done
  rm -f "$RUN/apiserver-stopped"
  if healthy; then
    log "already up and healthy"
    cmd_env_print
    return 0
  fi
  stop_all
  rm -rf "$RUN/etcd" "$RUN/env"
  make_pki
  # The agent is built from this clone; go's build cache makes this quick when unchanged.
  (cd "$repo" && go build -o "$RUN/bin/localstack-agent.new" ./hack/localstack/agent &&
    mv "$RUN/bin/localstack-agent.new" "$RUN/bin/localstack-agent") >"$LOGS/agent-build.log" 2>&1 9>&- &
  local build_pid=$!
  local sbx_mod gw_mod
  sbx_mod=$(cd "$here/build/sandbox" && go list -m -f '{{.Dir}}' sigs.k8s.io/agent-sandbox)
  gw_mod=$(cd "$here/build/sandbox" && go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$gw_mod/config/crd/standard" ] || die "gateway-api $GATEWAY_API_VERSION CRDs not found"

  start etcd "$KUBE_BIN/etcd" --name=localstack --data-dir="$RUN/etcd" \
    --listen-client-urls="$ETCD_URL" --advertise-client-urls="$ETCD_URL" \
    --listen-peer-urls=http://127.0.0.1:12380 --initial-advertise-peer-urls=http://127.0.0.1:12380 \
    --initial-cluster=localstack=http://127.0.0.1:12380 --unsafe-no-fsync --log-level=warn
  wait_for etcd 20 curl -fsS "$ETCD_URL/health"

  start_apiserver
  wait_for kube-apiserver 60 kubectl get --raw=/readyz

  wait "$build_pid" || { cat "$LOGS/agent-build.log" >&2; die "building the node agent failed"; }
  "$RUN/bin/localstack-agent" crds "$sbx_mod/k8s/crds" | kubectl apply --server-side --force-conflicts -f - >/dev/null
  kubectl apply --server-side --force-conflicts -f "$gw_mod/config/crd/standard" >/dev/null
  kubectl wait --for=condition=Established --timeout=30s crd --all >/dev/null

  start kube-controller-manager "$KUBE_BIN/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
    --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
    --bind-address=127.0.0.1 --secure-port=16257 --leader-elect=false \
    --controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" --use-service-account-credentials=false
  start agent-sandbox-controller "$SANDBOX_BIN/agent-sandbox-controller" --kubeconfig="$KUBECONFIG" \
    --extensions --leader-elect=false --enable-webhook=false \
    --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081
  start node-agent "$RUN/bin/localstack-agent" run --kubeconfig="$KUBECONFIG" --node-name=localstack-node \
    --pods-dir="$SANDBOX_DIR/pods" --runtime-dir="$SANDBOX_DIR/runtime" --sandboxd="$SANDBOX_BIN/sandboxd" \
    --python-runtime-dir="$sbx_mod/examples/python-runtime-sandbox" --dns-addr="$DNS_ADDR" \
    --health-addr=127.0.0.1:10054 --uid-base="$UID_BASE" --kube-version="$KUBE_VERSION"
  start sandbox-router "$SANDBOX_BIN/sandbox-router" --kubeconfig="$KUBECONFIG" \
    --http-bind-address="$ROUTER_IP:80" --metrics-bind-address="$ROUTER_IP:9090" \
    --health-probe-bind-address="$ROUTER_IP:8081" --allow-loopback-pod-ip=true --cache-enabled=true \
    --response-header-timeout=600s --proxy-timeout=600s

  wait_for kube-controller-manager 30 curl -fsSk https://127.0.0.1:16257/healthz
  wait_for default-serviceaccount 30 kubectl -n default get serviceaccount default
  apply_objects "$here/manifests"
  kubectl -n default patch gateway sandbox-gateway --subresource=status --type=merge \
    -p "{\"status\":{\"addresses\":[{\"type\":\"IPAddress\",\"value\":\"$ROUTER_IP\"}]}}" >/dev/null
  wait_for agent-sandbox-controller 30 curl -fsS http://127.0.0.1:18081/healthz
  wait_for node-agent 30 curl -fsS http://127.0.0.1:10054/healthz
  wait_for sandbox-router 30 curl -fsS "http://$ROUTER_IP:8081/readyz"
  for pool in sandboxd-pool python-pool; do
    wait_for "$pool" 60 pool_ready default "$pool" 2
  done
  write_env
  log "up in $((SECONDS - t0))s"
  cmd_env_print
}

cmd_down() {
  mkdir -p "$RUN" "$PIDS"
  exec 9>"$RUN/stack.lock"
  flock 9
  stop_all
  log "down: no stack process left"
}

# apiserver-stop / apiserver-start: stop and restart kube-apiserver alone (for tests of
# readiness probes); `up` waits while it is stopped instead of rebuilding the stack.
cmd_apiserver_stop() {
  local pid
  touch "$RUN/apiserver-stopped"
  pid=$(live_pid kube-apiserver) || die "kube-apiserver is not running"
  kill -TERM -- "-$pid"
  # It stops listening at once but may linger ~30 s draining watches.
  local deadline=$((SECONDS + 3))
  while live_pid kube-apiserver >/dev/null; do
    [ $SECONDS -lt $deadline ] || kill -KILL -- "-$pid" 2>/dev/null || true
    sleep 0.1
  done
  rm -f "$PIDS/kube-apiserver.pid"
}

cmd_apiserver_start() {
  if ! live_pid kube-apiserver >/dev/null; then
    start_apiserver
  fi
  wait_for kube-apiserver 60 kubectl get --raw=/readyz
  rm -f "$RUN/apiserver-stopped"
}

cmd_status() {
  local rc=0
  for name in $COMPONENTS; do
    if pid=$(live_pid "$name"); then
      printf '%-26s running (pid %s)\n' "$name" "$pid"
    else
      printf '%-26s stopped\n' "$name"
      rc=1
    fi
  done
  if healthy; then echo "stack: healthy"; else echo "stack: not healthy"; rc=1; fi
  return $rc
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
apiserver-stop) cmd_apiserver_stop ;;
apiserver-start) cmd_apiserver_start ;;
env) healthy || die "stack is not up (run: $0 up)"; cmd_env_print ;;
*) echo "usage: $0 up|down|status|env|apiserver-stop|apiserver-start" >&2; exit 2 ;;
esac
