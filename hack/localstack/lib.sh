# Helpers of stack.sh (sourced after versions.sh).
RUN=$LOCALSTACK_CACHE/run
PKI=$RUN/pki
PIDS=$RUN/pids
LOGS=$RUN/logs
export KUBECONFIG=$RUN/kubeconfig
export PATH=$KUBE_BIN:$PATH
ETCD_URL=http://127.0.0.1:12379
APISERVER_URL=https://127.0.0.1:16443
ROUTER_IP=127.0.0.254
DNS_ADDR=127.0.0.1:10053
UID_BASE=2000000
# Start order; stop_all goes in reverse.
COMPONENTS="etcd kube-apiserver kube-controller-manager agent-sandbox-controller node-agent sandbox-router"

# Sandbox processes run under uids that may not traverse a private home: their files and
# binaries then live under /var/lib instead of $RUN.
if [ "$(id -u)" = 0 ] && ! setpriv --reuid="$UID_BASE" --regid="$UID_BASE" --clear-groups test -x "$RUN" 2>/dev/null; then
  SANDBOX_DIR=/var/lib/k8s-sandbox-mcp
else
  SANDBOX_DIR=$RUN/sandboxes
fi

log() { echo "localstack: $*" >&2; }
die() { log "error: $*"; exit 1; }

# starttime prints field 22 of /proc/<pid>/stat: with the pid it identifies a process, so a
# stale pid file never makes us signal an unrelated process that reused the pid. It fails for
# a zombie: dead, though its parent (maybe an init that never reaps) has not collected it.
starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  [ "$1" != Z ] || return 1
  echo "${20}"
}

# start <name> <cmd...>: runs cmd in its own session (so its process group holds all its
# helpers), logs to $LOGS/<name>.log and records "pid starttime" in $PIDS/<name>.pid.
start() {
  local name=$1
  shift
  # 9>&-: the stack lock's fd must not outlive this script in the daemons.
  setsid "$@" </dev/null >>"$LOGS/$name.log" 2>&1 9>&- &
  local pid=$!
  echo "$pid $(starttime "$pid")" >"$PIDS/$name.pid"
}

# live_pid <name> prints the pid of a component if the process of its pid file still runs.
live_pid() {
  local f=$PIDS/$1.pid pid st
  [ -f "$f" ] || return 1
  read -r pid st <"$f" || return 1
  [ -n "$pid" ] && [ "$(starttime "$pid" 2>/dev/null)" = "$st" ] || return 1
  echo "$pid"
}

# stop_all stops every component of the pid files (SIGTERM to its process group, SIGKILL
# after 5 s: etcd's data is wiped by the next up anyway), then kills whatever still runs
# under a sandbox uid, and checks that nothing is left.
stop_all() {
  local name pid pids=() comps
  comps=$(echo "$COMPONENTS" | tr ' ' '\n' | tac)
  for name in $comps; do
    if pid=$(live_pid "$name"); then
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      pids+=("$name:$pid")
    fi
  done
  # kube-apiserver stops listening at once but may linger ~30 s draining: 5 s is plenty.
  local deadline=$((SECONDS + 5)) entry left
  while :; do
    left=()
    for entry in "${pids[@]}"; do
      live_pid "${entry%%:*}" >/dev/null && left+=("$entry")
    done
    [ ${#left[@]} -gt 0 ] && [ $SECONDS -lt $deadline ] || break
    sleep 0.1
  done
  for entry in "${left[@]}"; do
    [ -n "${LOCALSTACK_DEBUG:-}" ] && log "${entry%%:*} still runs 5 s after SIGTERM: SIGKILL"
    kill -KILL -- "-${entry##*:}" 2>/dev/null || kill -KILL "${entry##*:}" 2>/dev/null || true
  done
  # Members of a component's process group that outlived its leader.
  for entry in "${pids[@]}"; do
    kill -KILL -- "-${entry##*:}" 2>/dev/null || true
  done
  deadline=$((SECONDS + 5))
  for name in $COMPONENTS; do
    while live_pid "$name" >/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  done
  if [ -x "$RUN/bin/localstack-agent" ]; then
    "$RUN/bin/localstack-agent" reap --uid-base="$UID_BASE" 2>/dev/null
  fi
  for name in $COMPONENTS; do
    if pid=$(live_pid "$name"); then die "$name (pid $pid) still runs"; fi
    rm -f "$PIDS/$name.pid"
  done
  rm -rf "${SANDBOX_DIR:?}/pods"
}

# wait_for <what> <seconds> <cmd...>: retries cmd until it succeeds; fails early when the
# component of that name has died.
wait_for() {
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ -f "$PIDS/$what.pid" ] && ! live_pid "$what" >/dev/null; then
      tail -n 30 "$LOGS/$what.log" >&2 || true
      die "$what exited (log: $LOGS/$what.log)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      [ -f "$LOGS/$what.log" ] && tail -n 30 "$LOGS/$what.log" >&2
      die "timed out after ${secs}s waiting for $what"
    fi
    sleep 0.2
  done
}

healthy() {
  local name
  for name in $COMPONENTS; do live_pid "$name" >/dev/null || return 1; done
  [ -f "$RUN/env" ] &&
    curl -fsS -m 2 "$ETCD_URL/health" >/dev/null 2>&1 &&
    kubectl get --raw=/readyz --request-timeout=2s >/dev/null 2>&1 &&
    curl -fsSk -m 2 https://127.0.0.1:16257/healthz >/dev/null 2>&1 &&
    curl -fsS -m 2 http://127.0.0.1:18081/healthz >/dev/null 2>&1 &&
    curl -fsS -m 2 http://127.0.0.1:10054/healthz >/dev/null 2>&1 &&
    curl -fsS -m 2 "http://$ROUTER_IP:8081/readyz" >/dev/null 2>&1
}

pool_ready() { # pool_ready <ns> <pool> <n>
  [ "$(kubectl -n "$1" get sandboxwarmpool "$2" -o jsonpath='{.status.readyReplicas}')" = "$3" ]
}

# make_pki creates (once) a CA, the apiserver serving cert, an admin client cert
# (system:masters), the service-account key pair and the admin kubeconfig.
make_pki() {
  mkdir -p "$PKI"
  if [ ! -f "$PKI/done" ]; then
    (
      cd "$PKI"
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=localstack-ca 2>/dev/null
      sign() { # sign <name> <subject> <extensions>
        openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
        openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 \
          -extfile <(printf '%b' "$3") 2>/dev/null
        rm -f "$1.csr"
      }
      sign apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment"
      sign admin "/O=system:masters/CN=localstack-admin" "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment"
      openssl genrsa -out sa.key 2048 2>/dev/null
      openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
      chmod 600 ./*.key
      touch done
    )
  fi
  local b64="base64 -w0"
  cat >"$KUBECONFIG.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: localstack
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $($b64 <"$PKI/ca.crt")
users:
- name: localstack-admin
  user:
    client-certificate-data: $($b64 <"$PKI/admin.crt")
    client-key-data: $($b64 <"$PKI/admin.key")
contexts:
- name: localstack
  context:
    cluster: localstack
    user: localstack-admin
    namespace: default
current-context: localstack
EOF
  chmod 600 "$KUBECONFIG.tmp"
  mv "$KUBECONFIG.tmp" "$KUBECONFIG"
}

apply_objects() { # apply_objects <manifests dir>
  kubectl apply --server-side -f "$1/gateway.yaml" >/dev/null
  kubectl -n default apply --server-side -f "$1/sandbox-pools.yaml" >/dev/null
}

# Connection settings per connection type: one line each, "<KIND> <KEY=VALUE>...".
connections() {
  cat <<EOF
GATEWAY K8S_SANDBOX_CONNECTION__TYPE=gateway K8S_SANDBOX_CONNECTION__GATEWAY_NAME=sandbox-gateway K8S_SANDBOX_CONNECTION__GATEWAY_NAMESPACE=default
DIRECT K8S_SANDBOX_CONNECTION__TYPE=direct K8S_SANDBOX_CONNECTION__API_URL=http://$ROUTER_IP:80
IN_CLUSTER_POD_IP K8S_SANDBOX_CONNECTION__TYPE=in-cluster K8S_SANDBOX_CONNECTION__USE_POD_IP=true
IN_CLUSTER_DNS K8S_SANDBOX_CONNECTION__TYPE=in-cluster K8S_SANDBOX_CONNECTION__USE_POD_IP=false K8S_SANDBOX_DNS_SERVER=$DNS_ADDR
SANDBOXD_POD_IP K8S_SANDBOX_CONNECTION__TYPE=sandboxd-in-cluster K8S_SANDBOX_CONNECTION__MODE=in-cluster-pod-ip
SANDBOXD_SERVICE K8S_SANDBOX_CONNECTION__TYPE=sandboxd-in-cluster K8S_SANDBOX_CONNECTION__MODE=in-cluster-service K8S_SANDBOX_DNS_SERVER=$DNS_ADDR
EOF
}

# write_env writes $RUN/env (KEY=VALUE lines) for internal/localstack. Connection settings
# are CONN_<KIND>=<KEY=VALUE>,<KEY=VALUE>...
write_env() {
  {
    echo "KUBECONFIG=$KUBECONFIG"
    echo "RUN_DIR=$RUN"
    echo "APISERVER_URL=$APISERVER_URL"
    echo "NODE_NAME=localstack-node"
    echo "ROUTER_URL=http://$ROUTER_IP:80"
    echo "GATEWAY_NAME=sandbox-gateway"
    echo "GATEWAY_NAMESPACE=default"
    echo "GATEWAY_ADDRESS=$ROUTER_IP"
    echo "K8S_SANDBOX_DNS_SERVER=$DNS_ADDR"
    echo "SANDBOXD_POOL=sandboxd-pool"
    echo "PYTHON_POOL=python-pool"
    echo "PODS_DIR=$SANDBOX_DIR/pods"
    echo "UID_BASE=$UID_BASE"
    local kind rest
    connections | while read -r kind rest; do echo "CONN_$kind=${rest// /,}"; done
  } >"$RUN/env.tmp"
  mv "$RUN/env.tmp" "$RUN/env"
}

cmd_env_print() {
  cat <<EOF
# Local agent-sandbox stack ($RUN). Warm pools in namespace default:
# python-pool (python runtime, port 8888; gateway/direct/in-cluster) and
# sandboxd-pool (sandboxd REST 8080 + gRPC 9090; sandboxd-in-cluster).
export KUBECONFIG=$KUBECONFIG
# Pick one connection type:
EOF
  local kind rest first=1
  while read -r kind rest; do
    echo "# $(echo "$kind" | tr 'A-Z_' 'a-z ')"
    if [ $first = 1 ]; then echo "export $rest"; first=0; else echo "# export $rest"; fi
  done < <(connections)
}
