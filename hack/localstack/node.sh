#!/usr/bin/env bash
# PROTOTYPE for issue 9 (a real node), not used by the tests yet: a kubelet v1.37.2 with
# containerd v2 and Debian's runc and CNI plugins, registered with the running local stack as
# a second Node ("localstack-real-node"). Every pod address lives in the network namespace
# this script creates; the only thing on the host's network is a loopback bridge (socat) that
# lets the netns reach the API server. Images come from hack/localstack/images.sh.
#
#   node.sh up       start containerd and the kubelet in the netns (stack must be up)
#   node.sh down     stop them, remove pods' containers, mounts, cgroups and the netns
#   node.sh status
#   node.sh exec CMD run CMD inside the netns (e.g. curl a pod IP)
#
# Known gaps (see issue 9's closing note): the API server cannot reach the kubelet (no logs/
# exec yet: the control plane must move into the netns too); no kube-scheduler (pods name
# the node); no CoreDNS/kube-proxy/metrics-server yet.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

NETNS=k8s-sandbox-mcp
NODE_NAME=localstack-real-node
NODE_IP=10.243.0.1
POD_CIDR=10.244.0.0/24
NODE_DIR=/var/lib/k8s-sandbox-mcp/node
NODE_RUN=/run/k8s-sandbox-mcp/node
SOCK=$NODE_RUN/containerd.sock
NS_PATH=/run/netns/$NETNS

in_ns() { nsenter --net="$NS_PATH" -- "$@"; }

# stop_one <name>: SIGTERM to the component's process group, SIGKILL after 10 s.
stop_one() {
  local pid deadline=$((SECONDS + 10))
  pid=$(live_pid "$1") || { rm -f "$PIDS/$1.pid"; return 0; }
  kill -TERM -- "-$pid" 2>/dev/null || true
  while live_pid "$1" >/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$PIDS/$1.pid"
}

# kill_pods kills every process in the pods' cgroups (containers outlive their shims).
kill_pods() {
  local procs
  for procs in /sys/fs/cgroup/pids/kubepods*/cgroup.procs /sys/fs/cgroup/pids/kubepods*/*/cgroup.procs \
    /sys/fs/cgroup/pids/kubepods*/*/*/cgroup.procs /sys/fs/cgroup/pids/kubepods*/*/*/*/cgroup.procs; do
    [ -f "$procs" ] && xargs -r kill -KILL <"$procs" 2>/dev/null || true
  done
}

netns_up() {
  [ -e "$NS_PATH" ] || ip netns add "$NETNS"
  in_ns ip link set lo up
  # The node's address sits on the netns's loopback device: no dummy module here, and nothing
  # outside the netns needs to route to it.
  in_ns ip addr replace "$NODE_IP/32" dev lo
}

write_configs() {
  mkdir -p "$NODE_DIR"/{containerd,cni,kubelet,pki} "$NODE_RUN"
  cat >"$NODE_DIR/containerd/config.toml" <<EOF
version = 3
root = "$NODE_DIR/containerd/root"
state = "$NODE_RUN/containerd"
[grpc]
  address = "$SOCK"
[plugins.'io.containerd.cri.v1.runtime']
  # root here lacks CAP_SYS_RESOURCE: the pause container's oom_score_adj -998 would fail.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$NODE_DIR/cni"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
EOF
  cat >"$NODE_DIR/cni/10-bridge.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "localstack", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "dataDir": "$NODE_RUN/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  # The node's client certificate: system:node:<name> in system:nodes, for the Node authorizer.
  if [ ! -f "$NODE_DIR/pki/kubelet.crt" ]; then
    (cd "$NODE_DIR/pki" &&
      openssl req -newkey rsa:2048 -nodes -keyout kubelet.key -out kubelet.csr \
        -subj "/O=system:nodes/CN=system:node:$NODE_NAME" 2>/dev/null &&
      openssl x509 -req -in kubelet.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
        -out kubelet.crt -days 3650 -extfile <(printf 'subjectAltName=IP:%s\nextendedKeyUsage=clientAuth,serverAuth\nkeyUsage=digitalSignature,keyEncipherment' "$NODE_IP") 2>/dev/null &&
      rm -f kubelet.csr && chmod 600 kubelet.key)
  fi
  cat >"$NODE_DIR/kubelet/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: localstack
  cluster: {server: $APISERVER_URL, certificate-authority: $PKI/ca.crt}
users:
- name: node
  user: {client-certificate: $NODE_DIR/pki/kubelet.crt, client-key: $NODE_DIR/pki/kubelet.key}
contexts:
- name: node
  context: {cluster: localstack, user: node}
current-context: node
EOF
  : >"$NODE_DIR/kubelet/resolv.conf"
  cat >"$NODE_DIR/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The host has hybrid cgroup v1; the kubelet refuses it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $NODE_DIR/pki/kubelet.crt
tlsPrivateKeyFile: $NODE_DIR/pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$SOCK
clusterDomain: cluster.local
clusterDNS: [10.96.0.10]
resolvConf: $NODE_DIR/kubelet/resolv.conf
podCIDR: $POD_CIDR
registerNode: true
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

import_images() {
  local tar
  for tar in "$IMAGES_DIR"/*.tar; do
    [ -f "$tar" ] || die "no images in $IMAGES_DIR: run hack/localstack/images.sh"
    "$NODE_BIN/ctr" --address "$SOCK" -n k8s.io images import --no-unpack=false "$tar" >/dev/null ||
      die "importing $tar failed"
  done
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "needs root"
  "$here/../deps.sh" node
  [ -x "$NODE_BIN/kubelet" ] || die "node binaries missing: run hack/localstack/build-node.sh"
  kubectl get --raw=/readyz >/dev/null 2>&1 || die "the stack is not up: run hack/localstack/stack.sh up"
  mkdir -p "$PIDS" "$LOGS"
  netns_up
  write_configs
  # The API server listens on the host's loopback; this bridge gives the netns the same
  # address. One socat per connection enters the host's netns through a saved handle.
  mountpoint -q "$NODE_RUN/hostnet" || { touch "$NODE_RUN/hostnet" && mount --bind /proc/self/ns/net "$NODE_RUN/hostnet"; }
  live_pid node-apibridge >/dev/null || start node-apibridge nsenter --net="$NS_PATH" -- \
    socat TCP-LISTEN:16443,bind=127.0.0.1,fork,reuseaddr \
    EXEC:"nsenter --net=$NODE_RUN/hostnet -- socat STDIO TCP\:127.0.0.1\:16443"
  live_pid node-containerd >/dev/null || PATH=$NODE_BIN:$PATH start node-containerd \
    nsenter --net="$NS_PATH" -- "$NODE_BIN/containerd" --config "$NODE_DIR/containerd/config.toml"
  wait_for node-containerd 30 "$NODE_BIN/ctr" --address "$SOCK" version
  import_images
  live_pid node-kubelet >/dev/null || start node-kubelet nsenter --net="$NS_PATH" -- \
    "$NODE_BIN/kubelet" --config="$NODE_DIR/kubelet/config.yaml" --kubeconfig="$NODE_DIR/kubelet/kubeconfig" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --root-dir="$NODE_DIR/kubelet/root" --v=1
  wait_for node-ready 90 kubectl wait --for=condition=Ready --timeout=2s "node/$NODE_NAME"
  log "real node $NODE_NAME is Ready (pods in netns $NETNS, $POD_CIDR)"
}

cmd_down() {
  local c
  kubectl delete node "$NODE_NAME" --wait=false >/dev/null 2>&1 || true
  stop_one node-kubelet
  kill_pods
  stop_one node-containerd
  stop_one node-apibridge
  # Leftover shims: whatever still runs in the netns.
  if [ -e "$NS_PATH" ]; then
    ip netns pids "$NETNS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  fi
  kill_pods
  # The pods' own network namespaces, made by containerd for the CNI plugins.
  ip netns list 2>/dev/null | awk '/^cni-/{print $1}' | xargs -r -n1 ip netns del 2>/dev/null || true
  grep -E " ($NODE_DIR|$NODE_RUN)[^ ]*" /proc/self/mounts | awk '{print $2}' | sort -r |
    xargs -r -n1 umount -l 2>/dev/null || true
  [ -e "$NODE_RUN/hostnet" ] && umount "$NODE_RUN/hostnet" 2>/dev/null || true
  ip netns del "$NETNS" 2>/dev/null || true
  find /sys/fs/cgroup/*/kubepods* -depth -type d -exec rmdir {} + 2>/dev/null || true
  log "real node down"
}

cmd_status() {
  local c
  for c in node-apibridge node-containerd node-kubelet; do
    if live_pid "$c" >/dev/null; then echo "$c running"; else echo "$c stopped"; fi
  done
  kubectl get node "$NODE_NAME" 2>/dev/null || true
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  exec) shift; in_ns "$@" ;;
  *) echo "usage: $0 up|down|status|exec CMD" >&2; exit 2 ;;
esac
