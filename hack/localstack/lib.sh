# Helpers of stack.sh (sourced after versions.sh).
RUN=$LOCALSTACK_CACHE/run
PKI=$RUN/pki
PIDS=$RUN/pids
LOGS=$RUN/logs
export KUBECONFIG=$RUN/kubeconfig
export PATH=$STACK_BIN:$PATH
# Every component but the API bridge runs in this network namespace: pod addresses, Service
# addresses and the node's address exist only there. Its loopback carries the control plane's
# ports; the host's loopback only the bridge to the API server (same port).
NETNS=k8s-sandbox-mcp
NS_PATH=/run/netns/$NETNS
NODE_NAME=localstack-node
NODE_IP=10.243.0.1 # on the netns's loopback device
POD_CIDR=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
DNS_IP=10.96.0.10
METRICS_IP=10.96.0.11
API_PORT=16443
APISERVER_URL=https://127.0.0.1:$API_PORT
ETCD_URL=http://127.0.0.1:12379
ROUTER_IP=127.0.0.254 # in the netns
NODE_DIR=/var/lib/k8s-sandbox-mcp/node
NODE_RUN=/run/k8s-sandbox-mcp
SOCK=$NODE_RUN/containerd.sock
HOSTNET=$NODE_RUN/hostnet # a handle on the host's network namespace, for the API bridge
# Start order; stop_all goes in reverse.
COMPONENTS="etcd kube-apiserver api-bridge kube-controller-manager kube-scheduler containerd kubelet kube-proxy kube-router agent-sandbox-controller sandbox-router"

log() { echo "localstack: $*" >&2; }
die() { log "error: $*"; exit 1; }

in_ns() { nsenter --net="$NS_PATH" -- "$@"; }

# in_stack_netns: whether this process already runs in the stack's network namespace (a test
# run by hack/test.sh, or `stack.sh exec`).
in_stack_netns() {
  [ -e "$NS_PATH" ] && [ "$(stat -L -c %i /proc/self/ns/net)" = "$(stat -L -c %i "$NS_PATH")" ]
}

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
# helpers) inside the stack's netns, logs to $LOGS/<name>.log and records "pid starttime" in
# $PIDS/<name>.pid. nsenter execs cmd: the pid is the component's.
start() {
  local name=$1
  shift
  # 9>&-: the stack lock's fd must not outlive this script in the daemons.
  setsid nsenter --net="$NS_PATH" -- "$@" </dev/null >>"$LOGS/$name.log" 2>&1 9>&- &
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

# stop_one <name> <seconds>: SIGTERM to the component's process group, SIGKILL after <seconds>.
stop_one() {
  local pid deadline=$((SECONDS + $2))
  pid=$(live_pid "$1") || { rm -f "$PIDS/$1.pid"; return 0; }
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  while live_pid "$1" >/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  [ -z "${LOCALSTACK_DEBUG:-}" ] || ! live_pid "$1" >/dev/null || log "$1 still runs $2 s after SIGTERM: SIGKILL"
  kill -KILL -- "-$pid" 2>/dev/null || true
  deadline=$((SECONDS + 5))
  while live_pid "$1" >/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  if pid=$(live_pid "$1"); then die "$1 (pid $pid) still runs"; fi
  rm -f "$PIDS/$1.pid"
}

# wait_for <what> <seconds> <cmd...>: retries cmd until it succeeds; fails early, naming the
# log to read, when the component of that name has died.
wait_for() {
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    # One line naming the component and its log; LOCALSTACK_DEBUG=1 adds the log's tail.
    if [ -f "$PIDS/$what.pid" ] && ! live_pid "$what" >/dev/null; then
      [ -z "${LOCALSTACK_DEBUG:-}" ] || tail -n 20 "$LOGS/$what.log" >&2 || true
      die "$what exited (log: $LOGS/$what.log)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      [ -z "${LOCALSTACK_DEBUG:-}" ] || tail -n 20 "$LOGS/$what.log" >&2 || true
      die "timed out after ${secs}s waiting for $what (log: $LOGS/$what.log)"
    fi
    sleep 0.2
  done
}

pool_ready() { # pool_ready <ns> <pool> <n>
  [ "$(kubectl -n "$1" get sandboxwarmpool "$2" -o jsonpath='{.status.readyReplicas}')" = "$3" ]
}

# render <manifest>: the manifest with the stack's values in place of its @NAME@ placeholders.
render() {
  sed -e "s|@NODE_NAME@|$NODE_NAME|g; s|@NODE_IP@|$NODE_IP|g; s|@DNS_IP@|$DNS_IP|g" \
    -e "s|@METRICS_IP@|$METRICS_IP|g; s|@COREDNS_IMAGE@|${COREDNS_IMAGE:-}|g" \
    -e "s|@METRICS_SERVER_IMAGE@|${METRICS_SERVER_IMAGE:-}|g" \
    -e "s|@CA_BUNDLE@|$(base64 -w0 <"$PKI/ca.crt")|g" "$1"
}

apply() { # apply <manifest>...
  local m
  for m in "$@"; do
    render "$m" | kubectl apply --server-side --force-conflicts -f - >/dev/null || die "applying $m failed"
  done
}
