#!/usr/bin/env bash
# The local agent-sandbox stack: a one-node cluster of real components. etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler; a node of kubelet, containerd and runc with the
# CNI bridge, kube-proxy, kube-router (NetworkPolicy), CoreDNS and metrics-server; the agent-sandbox controller and
# sandbox-router; the example warm pools of deploy/examples in namespace default. Every
# sandbox is a runc container from images built on this machine (images.sh).
#
# All of it runs in the network namespace k8s-sandbox-mcp: pod, Service and node addresses
# exist only there. On the host's network there is only a loopback bridge to the API server
# (127.0.0.1:16443, the same address as inside), so kubectl works from the host. Whatever needs
# pod addresses (the tests, the server of hack/dev.sh) runs inside: `stack.sh exec CMD`.
#
#   stack.sh up      start (idempotent: a healthy stack is reused); prints the env
#   stack.sh down    stop everything up started; leaves no process, mount, cgroup or namespace
#   stack.sh status  health of each component
#   stack.sh env     shell exports for the stack (KUBECONFIG and K8S_SANDBOX_* settings)
#   stack.sh exec CMD [ARG...]   run CMD in the stack's network namespace
#   stack.sh apiserver-stop|apiserver-start   stop/restart kube-apiserver alone (for tests)
#
# State lives in $LOCALSTACK_CACHE/run, the node's in /var/lib/k8s-sandbox-mcp and
# /run/k8s-sandbox-mcp: one stack per machine. Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=pki.sh
. "$here/pki.sh"
# shellcheck source=node-config.sh
. "$here/node-config.sh"
# shellcheck source=node-down.sh
. "$here/node-down.sh"

ADDONS=$here/manifests/addons
# The example pools of the agent-sandbox version the stack runs, and that version's controller
# flags: v0.5 registers a conversion webhook unless told not to (the CRDs here convert nothing);
# v1.0 has no webhook and no such flag.
case $AGENT_SANDBOX_VERSION in
v0.5.*)
  POOLS=$repo/deploy/examples/sandbox-pools-v0.5.yaml
  CONTROLLER_FLAGS=(--enable-webhook=false) ;;
*)
  POOLS=$repo/deploy/examples/sandbox-pools.yaml
  CONTROLLER_FLAGS=() ;;
esac

preflight() {
  [ "$(id -u)" = 0 ] || die "needs root: the node runs containers and owns a network namespace"
  local tool
  for tool in go openssl curl flock setsid nsenter ip socat runc nft mount; do
    command -v "$tool" >/dev/null || die "missing $tool (hack/deps.sh node installs it)"
  done
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || die "missing the CNI plugins (apt-get install containernetworking-plugins)"
}

start_apiserver() {
  start kube-apiserver "$STACK_BIN/kube-apiserver" --etcd-servers="$ETCD_URL" \
    --bind-address=0.0.0.0 --advertise-address="$NODE_IP" --secure-port="$API_PORT" --cert-dir="$PKI" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- --enable-aggregator-routing=true \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --profiling=false --v=0
}

# start_bridge: the host's 127.0.0.1:$API_PORT, one socat per connection into the netns.
start_bridge() {
  if ! in_stack_netns; then
    mountpoint -q "$HOSTNET" || { touch "$HOSTNET" && mount --bind /proc/self/ns/net "$HOSTNET"; } ||
      die "saving a handle on the host's network namespace failed"
  fi
  mountpoint -q "$HOSTNET" || die "run stack.sh up from the host first (no handle on the host's network namespace)"
  setsid nsenter --net="$HOSTNET" -- socat TCP-LISTEN:"$API_PORT",bind=127.0.0.1,fork,reuseaddr \
    EXEC:"nsenter --net=$NS_PATH -- socat STDIO TCP\:127.0.0.1\:$API_PORT" </dev/null >>"$LOGS/api-bridge.log" 2>&1 9>&- &
  echo "$! $(starttime $!)" >"$PIDS/api-bridge.pid"
}

# running_version prints the agent-sandbox version the running stack was brought up on.
running_version() { sed -n 's/^AGENT_SANDBOX_VERSION=//p' "$RUN/env" 2>/dev/null; }

healthy() {
  local name
  for name in $COMPONENTS; do live_pid "$name" >/dev/null || return 1; done
  [ -f "$RUN/env" ] && [ -e "$NS_PATH" ] &&
    in_ns curl -fsS -m 2 "$ETCD_URL/health" >/dev/null 2>&1 &&
    kubectl get --raw=/readyz --request-timeout=2s >/dev/null 2>&1 &&
    in_ns curl -fsSk -m 2 https://127.0.0.1:10257/healthz >/dev/null 2>&1 &&
    in_ns curl -fsSk -m 2 https://127.0.0.1:10259/healthz >/dev/null 2>&1 &&
    in_ns curl -fsS -m 2 http://127.0.0.1:10248/healthz >/dev/null 2>&1 &&
    in_ns curl -fsS -m 2 http://127.0.0.1:10256/healthz >/dev/null 2>&1 &&
    in_ns curl -fsS -m 2 http://127.0.0.1:20244/healthz >/dev/null 2>&1 &&
    in_ns curl -fsS -m 2 http://127.0.0.1:18081/healthz >/dev/null 2>&1 &&
    in_ns curl -fsS -m 2 "http://$ROUTER_IP:8081/readyz" >/dev/null 2>&1
}

cmd_up() {
  local t0=$SECONDS
  mkdir -p "$RUN" "$PIDS" "$LOGS" "$NODE_RUN"
  exec 9>"$RUN/stack.lock"
  flock 9
  preflight
  "$here/build.sh"
  "$here/build-node.sh"
  # A test stopped the apiserver on purpose (apiserver-stop): wait for it to come back
  # rather than rebuild a stack other tests are using.
  local until=$((SECONDS + 120))
  while [ -f "$RUN/apiserver-stopped" ] && [ $SECONDS -lt $until ]; do sleep 0.5; done
  rm -f "$RUN/apiserver-stopped"
  if healthy; then
    local running
    running=$(running_version)
    if [ "$running" = "$AGENT_SANDBOX_VERSION" ]; then
      # The stack may have been brought up from another clone (one a run left up, then
      # removed): the files the tests read from a clone are this one's from now on, and so are
      # the images, under the names this clone's manifests give them (a warm images.sh only
      # hashes; ctr adds them beside what the node has, which running pods keep using).
      import_images
      image_names
      sed -i -e "s|^POOLS_MANIFEST=.*|POOLS_MANIFEST=$POOLS|" -e "s|^SERVER_OVERLAY=.*|SERVER_OVERLAY=$here/manifests/server|" \
        -e "s|^SANDBOXD_IMAGE=.*|SANDBOXD_IMAGE=$SANDBOXD_IMAGE|" -e "s|^PYTHON_IMAGE=.*|PYTHON_IMAGE=$PYTHON_IMAGE|" "$RUN/env"
      grep -q '^HOST_NETNS=' "$RUN/env" || echo "HOST_NETNS=$HOSTNET" >>"$RUN/env" # a stack up before it was written
      log "already up and healthy"
      cmd_env_print
      return 0
    fi
    in_stack_netns && die "the stack runs agent-sandbox ${running:-(unknown)}, not $AGENT_SANDBOX_VERSION: run LOCALSTACK_AGENT_SANDBOX=$AGENT_SANDBOX_VERSION hack/localstack/stack.sh up from the host"
    log "restarting on agent-sandbox $AGENT_SANDBOX_VERSION (it runs ${running:-an unknown version})"
  fi
  in_stack_netns && die "the stack is not healthy: run hack/localstack/stack.sh up from the host"
  stop_all
  # A component that fails stops `up` (die names it and its log): nothing it started stays.
  trap 'log "stopping what was started"; stop_all >/dev/null 2>&1' EXIT
  rm -rf "$RUN/etcd" "$RUN/env" "$RUN/images"
  netns_up
  make_pki
  write_node_configs
  local sbx_mod gw_mod
  sbx_mod=$(cd "$SANDBOX_MOD" && go list -m -f '{{.Dir}}' sigs.k8s.io/agent-sandbox)
  gw_mod=$(cd "$SANDBOX_MOD" && go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$gw_mod/config/crd/standard" ] || die "gateway-api $GATEWAY_API_VERSION CRDs not found"

  start etcd "$STACK_BIN/etcd" --name=localstack --data-dir="$RUN/etcd" \
    --listen-client-urls="$ETCD_URL" --advertise-client-urls="$ETCD_URL" \
    --listen-peer-urls=http://127.0.0.1:12380 --initial-advertise-peer-urls=http://127.0.0.1:12380 \
    --initial-cluster=localstack=http://127.0.0.1:12380 --unsafe-no-fsync --log-level=warn
  PATH=$STACK_BIN:$PATH start containerd "$STACK_BIN/containerd" --config "$NODE_DIR/containerd/config.toml"
  wait_for etcd 20 in_ns curl -fsS "$ETCD_URL/health"
  start_apiserver
  start_bridge
  # Images import while the API server starts.
  wait_for containerd 30 "$STACK_BIN/ctr" --address "$SOCK" version
  import_images &
  local import_pid=$!
  wait_for kube-apiserver 60 kubectl get --raw=/readyz

  (cd "$repo" && go run ./hack/localstack/crds "$sbx_mod/k8s/crds") | kubectl apply --server-side --force-conflicts -f - >/dev/null ||
    die "applying the agent-sandbox CRDs failed"
  kubectl apply --server-side --force-conflicts -f "$gw_mod/config/crd/standard" >/dev/null || die "applying the Gateway API CRDs failed"
  local kc=$PKI/kube-controller-manager.kubeconfig
  start kube-controller-manager "$STACK_BIN/kube-controller-manager" --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false --controllers='*' \
    --use-service-account-credentials=true --service-account-private-key-file="$PKI/sa.key" \
    --root-ca-file="$PKI/ca.crt" --enable-hostpath-provisioner=true --v=1
  start kube-scheduler "$STACK_BIN/kube-scheduler" --config="$NODE_DIR/scheduler/config.yaml" \
    --authentication-kubeconfig="$PKI/kube-scheduler.kubeconfig" --authorization-kubeconfig="$PKI/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --v=1
  wait "$import_pid" || exit 1
  image_names
  start kubelet "$STACK_BIN/kubelet" --config="$NODE_DIR/kubelet/config.yaml" \
    --kubeconfig="$PKI/kubelet.kubeconfig" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
    --root-dir="$NODE_DIR/kubelet/root" --v=1
  start kube-proxy "$STACK_BIN/kube-proxy" --config="$NODE_DIR/proxy/config.yaml" --v=1
  kubectl wait --for=condition=Established --timeout=30s crd --all >/dev/null
  start agent-sandbox-controller "$SANDBOX_BIN/agent-sandbox-controller" --kubeconfig="$KUBECONFIG" \
    --extensions --leader-elect=false "${CONTROLLER_FLAGS[@]}" \
    --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081
  start sandbox-router "$SANDBOX_BIN/sandbox-router" --kubeconfig="$KUBECONFIG" \
    --http-bind-address="$ROUTER_IP:80" --metrics-bind-address="$ROUTER_IP:9090" \
    --health-probe-bind-address="$ROUTER_IP:8081" --cache-enabled=true \
    --response-header-timeout=600s --proxy-timeout=600s

  wait_for kube-controller-manager 30 in_ns curl -fsSk https://127.0.0.1:10257/healthz
  wait_for kube-scheduler 30 in_ns curl -fsSk https://127.0.0.1:10259/healthz
  wait_for kubelet 60 kubectl wait --for=condition=Ready --timeout=2s "node/$NODE_NAME"
  # NetworkPolicy: only the firewall, once the Node it enforces on is registered. Traffic from
  # the node itself (the MCP server and the router run as processes here) always reaches pods,
  # as the NetworkPolicy API allows.
  start kube-router "$STACK_BIN/kube-router" --kubeconfig="$KUBECONFIG" --hostname-override="$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false \
    --service-cluster-ip-range="$SERVICE_CIDR" --health-port=20244 --iptables-sync-period=1m --v=1
  wait_for kube-proxy 30 in_ns curl -fsS http://127.0.0.1:10256/healthz
  wait_for kube-router 30 in_ns curl -fsS http://127.0.0.1:20244/healthz
  wait_for default-serviceaccount 30 kubectl -n default get serviceaccount default
  apply "$ADDONS/coredns.yaml"
  apply "$ADDONS/storageclass.yaml"
  kubectl -n kube-system create secret tls metrics-server-tls --cert="$PKI/metrics-server.crt" --key="$PKI/metrics-server.key" \
    --dry-run=client -o yaml | kubectl apply --server-side --force-conflicts -f - >/dev/null
  apply "$ADDONS/metrics-server.yaml"
  kubectl apply --server-side -f "$here/manifests/gateway.yaml" >/dev/null
  kubectl -n default patch gateway sandbox-gateway --subresource=status --type=merge \
    -p "{\"status\":{\"addresses\":[{\"type\":\"IPAddress\",\"value\":\"$ROUTER_IP\"}]}}" >/dev/null
  wait_for agent-sandbox-controller 30 in_ns curl -fsS http://127.0.0.1:18081/healthz
  wait_for sandbox-router 30 in_ns curl -fsS "http://$ROUTER_IP:8081/readyz"
  kubectl -n default apply --server-side -f "$POOLS" >/dev/null
  wait_for coredns 120 kubectl -n kube-system rollout status deploy/coredns --timeout=2s
  wait_for metrics-server 120 kubectl -n kube-system rollout status deploy/metrics-server --timeout=2s
  # Only once metrics-server answers: an unavailable aggregated API stalls every namespace
  # deletion in the cluster (the tests delete many).
  apply "$ADDONS/metrics-apiservice.yaml"
  wait_for metrics-server 60 kubectl wait --for=condition=Available --timeout=2s apiservice/v1beta1.metrics.k8s.io
  for pool in sandboxd-pool python-pool; do
    wait_for "$pool" 120 pool_ready default "$pool" 2
  done
  write_env
  trap - EXIT
  log "up in $((SECONDS - t0))s"
  cmd_env_print
}

cmd_down() {
  mkdir -p "$RUN" "$PIDS" "$NODE_RUN"
  exec 9>"$RUN/stack.lock"
  flock 9
  stop_all
  log "down: no stack process, mount, cgroup or network namespace left"
}

# apiserver-stop / apiserver-start: stop and restart kube-apiserver alone (for tests of
# readiness probes); `up` waits while it is stopped instead of rebuilding the stack.
cmd_apiserver_stop() {
  touch "$RUN/apiserver-stopped"
  live_pid kube-apiserver >/dev/null || die "kube-apiserver is not running"
  # It stops listening at once but may linger ~30 s draining watches.
  stop_one kube-apiserver 3
}

cmd_apiserver_start() {
  live_pid kube-apiserver >/dev/null || start_apiserver
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

# Connection settings per connection type: one line each, "<KIND> <KEY=VALUE>...".
connections() {
  cat <<EOC
GATEWAY K8S_SANDBOX_CONNECTION__TYPE=gateway K8S_SANDBOX_CONNECTION__GATEWAY_NAME=sandbox-gateway K8S_SANDBOX_CONNECTION__GATEWAY_NAMESPACE=default
DIRECT K8S_SANDBOX_CONNECTION__TYPE=direct K8S_SANDBOX_CONNECTION__API_URL=http://$ROUTER_IP:80
IN_CLUSTER_POD_IP K8S_SANDBOX_CONNECTION__TYPE=in-cluster K8S_SANDBOX_CONNECTION__USE_POD_IP=true
IN_CLUSTER_DNS K8S_SANDBOX_CONNECTION__TYPE=in-cluster K8S_SANDBOX_CONNECTION__USE_POD_IP=false K8S_SANDBOX_DNS_SERVER=$DNS_IP:53
SANDBOXD_POD_IP K8S_SANDBOX_CONNECTION__TYPE=sandboxd-in-cluster K8S_SANDBOX_CONNECTION__MODE=in-cluster-pod-ip
SANDBOXD_SERVICE K8S_SANDBOX_CONNECTION__TYPE=sandboxd-in-cluster K8S_SANDBOX_CONNECTION__MODE=in-cluster-service K8S_SANDBOX_DNS_SERVER=$DNS_IP:53
EOC
}

# write_env writes $RUN/env (KEY=VALUE lines) for internal/localstack. Connection settings
# are CONN_<KIND>=<KEY=VALUE>,<KEY=VALUE>...
write_env() {
  {
    echo "KUBECONFIG=$KUBECONFIG"
    echo "RUN_DIR=$RUN"
    echo "NETNS=$NS_PATH"
    echo "HOST_NETNS=$HOSTNET"
    echo "APISERVER_URL=$APISERVER_URL"
    echo "NODE_NAME=$NODE_NAME"
    echo "ROUTER_URL=http://$ROUTER_IP:80"
    echo "GATEWAY_NAME=sandbox-gateway"
    echo "GATEWAY_NAMESPACE=default"
    echo "GATEWAY_ADDRESS=$ROUTER_IP"
    echo "K8S_SANDBOX_DNS_SERVER=$DNS_IP:53"
    echo "AGENT_SANDBOX_VERSION=$AGENT_SANDBOX_VERSION"
    echo "SANDBOXD_IMAGE=$SANDBOXD_IMAGE"
    echo "PYTHON_IMAGE=$PYTHON_IMAGE"
    echo "SANDBOXD_POOL=sandboxd-pool"
    echo "PYTHON_POOL=python-pool"
    echo "POOLS_MANIFEST=$POOLS"
    echo "KUBECTL=$STACK_BIN/kubectl"
    echo "SERVER_OVERLAY=$here/manifests/server"
    local kind rest
    connections | while read -r kind rest; do echo "CONN_$kind=${rest// /,}"; done
  } >"$RUN/env.tmp"
  mv "$RUN/env.tmp" "$RUN/env"
}

cmd_env_print() {
  cat <<EOC
# Local agent-sandbox stack ($RUN), agent-sandbox $AGENT_SANDBOX_VERSION. Warm pools in namespace default ($POOLS):
# python-pool (python runtime, port 8888; gateway/direct/in-cluster) and
# sandboxd-pool (sandboxd REST 8080 + gRPC 9090; sandboxd-in-cluster).
# Pod addresses exist in the stack's network namespace only: run the server there with
#   hack/localstack/stack.sh exec <command>
export KUBECONFIG=$KUBECONFIG
# Pick one connection type:
EOC
  local kind rest first=1
  while read -r kind rest; do
    echo "# $(echo "$kind" | tr 'A-Z_' 'a-z ')"
    if [ $first = 1 ]; then echo "export $rest"; first=0; else echo "# export $rest"; fi
  done < <(connections)
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
apiserver-stop) cmd_apiserver_stop ;;
apiserver-start) cmd_apiserver_start ;;
env) healthy || die "stack is not up (run: $0 up)"; cmd_env_print ;;
exec)
  shift
  [ $# -gt 0 ] || die "usage: $0 exec CMD [ARG...]"
  [ -e "$NS_PATH" ] || die "stack is not up (run: $0 up)"
  exec nsenter --net="$NS_PATH" -- "$@"
  ;;
*) echo "usage: $0 up|down|status|env|exec CMD|apiserver-stop|apiserver-start" >&2; exit 2 ;;
esac
