#!/usr/bin/env bash
# PROTOTYPE for issue 9 (a real node), not used by the tests yet: a kubelet v1.37.2 with
# containerd v2 and Debian's runc and CNI plugins, registered with the running local stack as
# a second Node ("localstack-real-node"), with what a cluster has around it: kube-scheduler
# (profile "real-node" only), kube-proxy (nftables), the endpointslice, deployment and
# replicaset controllers the stack's controller manager lacks, CoreDNS at
# 10.96.0.10 and metrics-server behind the metrics.k8s.io APIService. Every pod and Service
# address lives in the network namespace this script creates; on the host's network there are
# only loopback bridges (socat): the netns reaches the API server, the API server reaches
# metrics-server. Images come from hack/localstack/images.sh.
#
#   node.sh up       start it all (the stack must be up)
#   node.sh down     stop it all, remove what it added to the cluster, its pods' containers,
#                    mounts, cgroups and the netns
#   node.sh status
#   node.sh check    prove scheduler, Services, DNS and metrics work; prints figures
#   node.sh exec CMD run CMD inside the netns, resolving names with the cluster DNS
#
# The stand-in node of stack.sh (hack/localstack/agent) binds every unscheduled pod, whatever
# its schedulerName: pods meant for this node go in a namespace labelled
# k8s-sandbox-mcp.io/real-node=true (manifests/node/binding-guard.yaml keeps the agent off
# them) with schedulerName: real-node.
#
# Known gaps, all for stack.sh to close when the control plane moves into the netns: the API
# server cannot reach the kubelet (no logs/exec); it has no front-proxy client certificate,
# so the metrics bridge presents one for it and any local process reaching the bridge's
# loopback port may name any user to metrics-server (read-only metrics); its endpoint
# reconciler is off (manifests/node/apiserver-endpoints.yaml stands in); the stack's
# controller manager lacks the endpointslice, deployment and replicaset controllers (run
# here), whose slices of the stand-in node's 127.0.0.x pods fail validation (retried, with
# Warning events on those Services).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

NETNS=k8s-sandbox-mcp
NODE_NAME=localstack-real-node
FAKE_NODE=localstack-node # stack.sh's node agent
SCHEDULER_NAME=real-node
GUARD_LABEL=k8s-sandbox-mcp.io/real-node
NODE_IP=10.243.0.1
POD_CIDR=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16 # the API server's --service-cluster-ip-range
DNS_IP=10.96.0.10
METRICS_IP=10.96.0.11
API_PORT=${APISERVER_URL##*:}
METRICS_HOST_PORT=16444 # host loopback: the API server's way to metrics-server
NODE_DIR=/var/lib/k8s-sandbox-mcp/node
NODE_RUN=/run/k8s-sandbox-mcp/node
SOCK=$NODE_RUN/containerd.sock
NS_PATH=/run/netns/$NETNS
MANIFESTS=$here/manifests/node
CHECK_NS=real-node-check
# Start order; down stops them in reverse.
NODE_COMPONENTS="node-apibridge node-containerd node-kubelet node-kcm node-scheduler node-proxy node-metricsbridge"

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
  # The netns has no uplink: without a route, the node's own processes could not even try a
  # ClusterIP (kube-proxy's DNAT comes after the route lookup).
  in_ns ip route replace "$SERVICE_CIDR" dev lo src "$NODE_IP"
  in_ns sysctl -qw net.ipv4.ip_forward=1
  # Pod -> ClusterIP -> pod on the same bridge: the reply is bridged, and must pass
  # conntrack to be un-DNATed (per netns since Linux 5.3).
  [ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || in_ns sysctl -qw net.bridge.bridge-nf-call-iptables=1
}

# cert <name> <subject> [<extensions>] [<CA>]: a key and a certificate signed by <CA>
# (<CA>.crt and <CA>.key; default the stack's CA), for client auth unless told; made again
# when the CA changed.
cert() {
  local name=$1 subj=$2 ext=${3:-extendedKeyUsage=clientAuth} ca=${4:-$PKI/ca}
  local dir=$NODE_DIR/pki
  [ -f "$dir/$name.crt" ] && openssl verify -CAfile "$ca.crt" "$dir/$name.crt" >/dev/null 2>&1 && return 0
  (cd "$dir" &&
    openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null &&
    openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial \
      -out "$name.crt" -days 3650 -extfile <(printf '%b\nkeyUsage=digitalSignature,keyEncipherment' "$ext") 2>/dev/null &&
    rm -f "$name.csr" && chmod 600 "$name.key") || die "signing the $name certificate failed"
}

# kubeconfig <name>: $NODE_DIR/kubeconfig/<name> for the certificate <name>.
kubeconfig() {
  cat >"$NODE_DIR/kubeconfig/$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: localstack
  cluster: {server: $APISERVER_URL, certificate-authority: $PKI/ca.crt}
users:
- name: $1
  user: {client-certificate: $NODE_DIR/pki/$1.crt, client-key: $NODE_DIR/pki/$1.key}
contexts:
- name: $1
  context: {cluster: localstack, user: $1}
current-context: $1
EOF
}

write_pki() {
  # Each component its own identity, the one the bootstrap RBAC policy grants its rights to.
  cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" \
    "subjectAltName=IP:$NODE_IP\nextendedKeyUsage=clientAuth,serverAuth"
  cert kube-scheduler /CN=system:kube-scheduler
  cert kube-proxy /CN=system:kube-proxy
  cert kube-controller-manager /CN=system:kube-controller-manager
  # metrics-server's serving certificate, for the names the aggregator and the bridge check.
  cert metrics-server /CN=metrics-server \
    "subjectAltName=DNS:metrics-server-host.kube-system.svc,DNS:metrics-server.kube-system.svc,IP:$METRICS_IP\nextendedKeyUsage=serverAuth"
  # The front proxy's CA and client certificate: what the API server would present to
  # aggregated APIs with --proxy-client-cert-file (stack.sh does not set it); the metrics
  # bridge presents it instead, see cmd_up.
  [ -f "$NODE_DIR/pki/front-proxy-ca.crt" ] ||
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$NODE_DIR/pki/front-proxy-ca.key" \
      -out "$NODE_DIR/pki/front-proxy-ca.crt" -days 3650 -subj /CN=localstack-front-proxy-ca 2>/dev/null ||
    die "making the front proxy CA failed"
  cert front-proxy-client /CN=front-proxy-client extendedKeyUsage=clientAuth "$NODE_DIR/pki/front-proxy-ca"
  local c
  for c in kubelet kube-scheduler kube-proxy kube-controller-manager; do kubeconfig "$c"; done
}

write_configs() {
  mkdir -p "$NODE_DIR"/{containerd,cni,kubelet,pki,kubeconfig,scheduler,proxy} "$NODE_RUN"
  write_pki
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
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
           "dataDir": "$NODE_RUN/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
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
clusterDNS: [$DNS_IP]
resolvConf: $NODE_DIR/kubelet/resolv.conf
podCIDR: $POD_CIDR
registerNode: true
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  # One profile, so the default scheduler name stays the stand-in node's; its pods may go
  # to this node only (the stand-in node is Ready and schedulable too).
  cat >"$NODE_DIR/scheduler/config.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: $NODE_DIR/kubeconfig/kube-scheduler}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: $SCHEDULER_NAME
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/hostname, operator: In, values: [$NODE_NAME]}
EOF
  # conntrack zeros: leave the kernel's (global) conntrack settings alone.
  cat >"$NODE_DIR/proxy/config.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $NODE_DIR/kubeconfig/kube-proxy}
hostnameOverride: $NODE_NAME
mode: nftables
clusterCIDR: $CLUSTER_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

# import_images imports the current tarball of every image images.sh builds (a warm run only
# hashes) and sets COREDNS_IMAGE and METRICS_SERVER_IMAGE from the names it prints.
import_images() {
  local out name tar
  out=$("$here/images.sh") || die "hack/localstack/images.sh failed"
  while read -r name tar; do
    "$NODE_BIN/ctr" --address "$SOCK" -n k8s.io images import --no-unpack=false "$tar" >/dev/null 2>>"$LOGS/node-images.log" ||
      die "importing $tar failed (log: $LOGS/node-images.log)"
    case $name in
    */coredns:*) COREDNS_IMAGE=$name ;;
    */metrics-server:*) METRICS_SERVER_IMAGE=$name ;;
    esac
  done <<<"$out"
  [ -n "${COREDNS_IMAGE:-}" ] && [ -n "${METRICS_SERVER_IMAGE:-}" ] || die "images.sh built no coredns or metrics-server image"
}

# render <manifest>: the manifest with node.sh's values in place of its @NAME@ placeholders.
render() {
  sed -e "s|@NODE_NAME@|$NODE_NAME|g; s|@NODE_IP@|$NODE_IP|g; s|@FAKE_NODE@|$FAKE_NODE|g" \
    -e "s|@SCHEDULER_NAME@|$SCHEDULER_NAME|g; s|@API_PORT@|$API_PORT|g; s|@DNS_IP@|$DNS_IP|g" \
    -e "s|@METRICS_IP@|$METRICS_IP|g; s|@METRICS_HOST_PORT@|$METRICS_HOST_PORT|g" \
    -e "s|@COREDNS_IMAGE@|${COREDNS_IMAGE:-}|g; s|@METRICS_SERVER_IMAGE@|${METRICS_SERVER_IMAGE:-}|g" \
    -e "s|@CA_BUNDLE@|$(base64 -w0 <"$PKI/ca.crt")|g" "$MANIFESTS/$1"
}

apply() { # apply <manifest>...
  local m
  for m in "$@"; do
    render "$m" | kubectl apply --server-side --force-conflicts -f - >/dev/null || die "applying $m failed"
  done
}

# guard_active: whether the API server enforces the binding guard yet (a policy takes effect
# about a second after it is created). Asks with a dry-run Binding of a pod that does not
# exist: admission runs before the pod is looked up.
guard_active() {
  local out
  out=$(printf '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"coredns-guard-probe","namespace":"kube-system"},"target":{"kind":"Node","name":"%s"}}' "$FAKE_NODE" |
    kubectl create --raw "/api/v1/namespaces/kube-system/pods/coredns-guard-probe/binding?dryRun=All" -f - 2>&1) || true
  [[ $out == *"belongs to the real node"* ]]
}

start_in_ns() { # start_in_ns <name> <cmd...>
  local name=$1
  shift
  live_pid "$name" >/dev/null || start "$name" nsenter --net="$NS_PATH" -- "$@"
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "needs root"
  "$here/../deps.sh" node
  [ -x "$NODE_BIN/kube-scheduler" ] || die "node binaries missing: run hack/localstack/build-node.sh"
  kubectl get --raw=/readyz >/dev/null 2>&1 || die "the stack is not up: run hack/localstack/stack.sh up"
  mkdir -p "$PIDS" "$LOGS"
  netns_up
  write_configs
  # The API server listens on the host's loopback; this bridge gives the netns the same
  # port on every address of it (the node's, for pods through the `kubernetes` Service). One
  # socat per connection enters the host's netns through a saved handle.
  mountpoint -q "$NODE_RUN/hostnet" || { touch "$NODE_RUN/hostnet" && mount --bind /proc/self/ns/net "$NODE_RUN/hostnet"; }
  start_in_ns node-apibridge socat TCP-LISTEN:"$API_PORT",fork,reuseaddr \
    EXEC:"nsenter --net=$NODE_RUN/hostnet -- socat STDIO TCP\:127.0.0.1\:$API_PORT"
  PATH=$NODE_BIN:$PATH start_in_ns node-containerd "$NODE_BIN/containerd" --config "$NODE_DIR/containerd/config.toml"
  wait_for node-containerd 30 "$NODE_BIN/ctr" --address "$SOCK" version
  import_images
  start_in_ns node-kubelet "$NODE_BIN/kubelet" --config="$NODE_DIR/kubelet/config.yaml" \
    --kubeconfig="$NODE_DIR/kubeconfig/kubelet" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
    --root-dir="$NODE_DIR/kubelet/root" --v=1
  # The stack's controller manager runs neither the endpointslice controller (kube-proxy and
  # CoreDNS read slices) nor the deployment and replicaset controllers (the add-ons are
  # Deployments); this one runs those, each under its own service account (bootstrap RBAC).
  # They act cluster-wide: nothing of the stand-in node's is a Deployment, and nothing there
  # reads slices (those of its 127.0.0.x pod addresses fail validation and are retried).
  local kc=$NODE_DIR/kubeconfig
  start_in_ns node-kcm "$KUBE_BIN/kube-controller-manager" --kubeconfig="$kc/kube-controller-manager" \
    --authentication-kubeconfig="$kc/kube-controller-manager" --authorization-kubeconfig="$kc/kube-controller-manager" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
    --controllers=endpointslice-controller,deployment-controller,replicaset-controller --use-service-account-credentials=true --v=1
  start_in_ns node-scheduler "$NODE_BIN/kube-scheduler" --config="$NODE_DIR/scheduler/config.yaml" \
    --authentication-kubeconfig="$kc/kube-scheduler" --authorization-kubeconfig="$kc/kube-scheduler" \
    --bind-address=127.0.0.1 --secure-port=10259 --v=1
  start_in_ns node-proxy "$NODE_BIN/kube-proxy" --config="$NODE_DIR/proxy/config.yaml" --v=1
  wait_for node-ready 90 kubectl wait --for=condition=Ready --timeout=2s "node/$NODE_NAME"
  # Admission taints every new Node not-ready; the node lifecycle controller, which lifts it,
  # is not run (it would also declare the stand-in node, which posts no heartbeats, lost).
  kubectl taint node "$NODE_NAME" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  wait_for node-kcm 30 in_ns curl -fsSk https://127.0.0.1:10257/healthz
  wait_for node-scheduler 30 in_ns curl -fsSk https://127.0.0.1:10259/healthz
  wait_for node-proxy 30 in_ns curl -fsS http://127.0.0.1:10256/healthz
  apply binding-guard.yaml
  wait_for binding-guard 30 guard_active
  apply apiserver-endpoints.yaml coredns.yaml
  kubectl -n kube-system create secret generic metrics-server-tls --from-file=tls.crt="$NODE_DIR/pki/metrics-server.crt" \
    --from-file=tls.key="$NODE_DIR/pki/metrics-server.key" --from-file=front-proxy-ca.crt="$NODE_DIR/pki/front-proxy-ca.crt" \
    --dry-run=client -o yaml | kubectl apply --server-side --force-conflicts -f - >/dev/null
  apply metrics-server.yaml
  wait_for coredns 120 kubectl -n kube-system rollout status deploy/coredns --timeout=2s
  wait_for metrics-server 120 kubectl -n kube-system rollout status deploy/metrics-server --timeout=2s
  local elsewhere
  elsewhere=$(kubectl -n kube-system get pods -l 'k8s-app in (kube-dns,metrics-server)' \
    -o jsonpath='{range .items[?(@.spec.nodeName!="'"$NODE_NAME"'")]}{.metadata.name}@{.spec.nodeName} {end}')
  [ -z "$elsewhere" ] || die "add-on pods not on $NODE_NAME: $elsewhere"
  # The API server cannot reach the netns: a loopback port on the host, bridged to the
  # metrics-server Service. The bridge is the front proxy too: the API server (no
  # --proxy-client-cert-file in stack.sh) connects without a client certificate, so its
  # X-Remote-User/-Group headers would be ignored and every request be anonymous. The bridge
  # ends its TLS (metrics-server's certificate) and connects on with the front proxy's, so
  # metrics-server trusts the caller identity the API server passes and authorizes that.
  local p=$NODE_DIR/pki
  live_pid node-metricsbridge >/dev/null || start node-metricsbridge \
    socat OPENSSL-LISTEN:"$METRICS_HOST_PORT",bind=127.0.0.1,fork,reuseaddr,verify=0,cert="$p/metrics-server.crt",key="$p/metrics-server.key" \
    EXEC:"nsenter --net=$NS_PATH -- socat STDIO OPENSSL\:$METRICS_IP\:443\,cafile=$PKI/ca.crt\,cert=$p/front-proxy-client.crt\,key=$p/front-proxy-client.key"
  # (Past the bridge a request must name its user, as the API server's do.)
  wait_for node-metricsbridge 30 curl -fsS --cacert "$PKI/ca.crt" -H "X-Remote-User: node.sh" \
    --resolve "metrics-server-host.kube-system.svc:$METRICS_HOST_PORT:127.0.0.1" \
    "https://metrics-server-host.kube-system.svc:$METRICS_HOST_PORT/livez"
  # The APIService goes in only once that answers, and out again if it does not become
  # Available: an unavailable aggregated API stalls every namespace deletion in the cluster
  # (the tests delete many).
  apply metrics-apiservice.yaml
  if ! (wait_for metrics-apiservice 60 kubectl wait --for=condition=Available --timeout=2s apiservice/v1beta1.metrics.k8s.io); then
    kubectl get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.status.conditions[0].message}{"\n"}' >&2 || true
    kubectl delete apiservice v1beta1.metrics.k8s.io --ignore-not-found >/dev/null 2>&1 || true
    die "metrics.k8s.io did not become Available: APIService removed (log: $LOGS/node-metricsbridge.log)"
  fi
  log "real node $NODE_NAME is Ready (pods in netns $NETNS, $POD_CIDR; DNS $DNS_IP; metrics.k8s.io via 127.0.0.1:$METRICS_HOST_PORT)"
}

# unapply removes what up added to the cluster but the binding guard (see cmd_down). The
# APIService goes first: once metrics-server stops, it would stall namespace deletions
# cluster-wide.
unapply() {
  local m
  kubectl delete apiservice v1beta1.metrics.k8s.io --ignore-not-found >/dev/null 2>&1 || true
  for m in metrics-apiservice.yaml metrics-server.yaml coredns.yaml apiserver-endpoints.yaml; do
    render "$m" | kubectl delete --ignore-not-found --wait=false -f - >/dev/null 2>&1 || true
  done
  kubectl -n kube-system delete secret metrics-server-tls --ignore-not-found >/dev/null 2>&1 || true
  # The service accounts our controller manager made for its controllers.
  kubectl -n kube-system delete serviceaccount endpointslice-controller deployment-controller replicaset-controller \
    --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace "$CHECK_NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}

# pods_on_node prints namespace/name of the pods bound to this node.
pods_on_node() {
  kubectl get pods -A --field-selector "spec.nodeName=$NODE_NAME" \
    -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}' 2>/dev/null || true
}

cmd_down() {
  local p deadline=$((SECONDS + 30))
  if kubectl get --raw=/readyz >/dev/null 2>&1; then
    unapply
    # While the kubelet runs, pods end gracefully; what is left is deleted as the pod GC
    # controller (not run by the stack) would once the node is gone.
    while [ -n "$(pods_on_node)" ] && live_pid node-kubelet >/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
    kubectl delete node "$NODE_NAME" --wait=false >/dev/null 2>&1 || true
    for p in $(pods_on_node); do
      kubectl -n "${p%%/*}" delete pod "${p#*/}" --grace-period=0 --force >/dev/null 2>&1 || true
    done
    # Without the guard, the stand-in node's agent would take the new pods of the real
    # node's namespaces (a warm pool refills at once): it stays while such a namespace does.
    local kept
    kept=$(kubectl get namespaces -l "$GUARD_LABEL=true" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}' 2>/dev/null |
      tr ' ' '\n' | grep -vx "$CHECK_NS" | paste -sd' ' || true)
    if [ -z "$kept" ]; then
      render binding-guard.yaml | kubectl delete --ignore-not-found --wait=false -f - >/dev/null 2>&1 || true
    else
      log "kept the binding guard (manifests/node/binding-guard.yaml): namespaces $kept are labelled $GUARD_LABEL=true"
    fi
  fi
  for p in $(echo "$NODE_COMPONENTS" | tr ' ' '\n' | tac); do stop_one "$p"; [ "$p" != node-kubelet ] || kill_pods; done
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
  # `ip netns add` made /run/netns a mount point; gone with the last namespace in it.
  if mountpoint -q /run/netns && [ -z "$(ls -A /run/netns)" ]; then umount /run/netns 2>/dev/null || true; fi
  find /sys/fs/cgroup/*/kubepods* -depth -type d -exec rmdir {} + 2>/dev/null || true
  log "real node down"
}

cmd_status() {
  local c
  for c in $NODE_COMPONENTS; do
    if live_pid "$c" >/dev/null; then echo "$c running"; else echo "$c stopped"; fi
  done
  kubectl get node "$NODE_NAME" 2>/dev/null || true
  kubectl get apiservice v1beta1.metrics.k8s.io 2>/dev/null || true
}

# cmd_exec runs a command in the netns with /etc/resolv.conf pointing at the cluster DNS (in
# a private mount namespace: the host's file is untouched).
cmd_exec() {
  [ $# -gt 0 ] || die "usage: node.sh exec CMD [ARG...]"
  mkdir -p "$NODE_RUN"
  printf 'nameserver %s\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n' \
    "$DNS_IP" >"$NODE_RUN/resolv.conf"
  # shellcheck disable=SC2016
  in_ns unshare --mount --propagation private -- \
    sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$NODE_RUN/resolv.conf" "$@"
}

# ---- check ---------------------------------------------------------------------------

CHECK_FAILED=0
ok() { printf '%-10s ok    %s\n' "$1" "$2"; }
bad() { printf '%-10s FAIL  %s\n' "$1" "$2"; CHECK_FAILED=1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2fs", b - a}'; }
jp() { kubectl -n "$CHECK_NS" get "$1" -o jsonpath="$2" 2>/dev/null || true; }

# in_pod <pod> <cmd...>: runs cmd in the pod's first container through containerd (the API
# server cannot reach the kubelet, so no kubectl exec).
in_pod() {
  local cid
  cid=$(jp "pod/$1" '{.status.containerStatuses[0].containerID}')
  "$NODE_BIN/ctr" --address "$SOCK" -n k8s.io tasks exec --exec-id "check-$RANDOM" "${cid#containerd://}" "${@:2}" 2>&1 |
    grep -v 'level=warning msg="DEPRECATION'
}

check_scheduler() { # <start time> <agent log lines before>
  local t0=$1 node stray agent_log=$LOGS/node-agent.log refused others
  if kubectl -n "$CHECK_NS" wait --for=jsonpath='{.spec.nodeName}'="$NODE_NAME" pod/web-pod --timeout=60s >/dev/null 2>&1; then
    local bound by; bound=$(since "$t0")
    kubectl -n "$CHECK_NS" wait --for=condition=Ready pod/web-pod --timeout=90s >/dev/null 2>&1 ||
      bad scheduler "pod web-pod bound but not Ready in 90 s"
    by=$(kubectl -n "$CHECK_NS" get events --field-selector involvedObject.name=web-pod,reason=Scheduled \
      -o jsonpath='{.items[0].reportingComponent}' 2>/dev/null || true)
    ok scheduler "pod web-pod (schedulerName $SCHEDULER_NAME) bound to $NODE_NAME by '$by' in $bound, Ready after $(since "$t0")"
  else
    node=$(jp pod/web-pod '{.spec.nodeName}')
    bad scheduler "pod web-pod not bound to $NODE_NAME in 60 s (nodeName '${node}')"
  fi
  stray=$(jp pod/stray '{.spec.nodeName}')
  refused=$(tail -n +"$(($2 + 1))" "$agent_log" 2>/dev/null | grep -c "pod $CHECK_NS/stray: bind: .*belongs to the real node" || true)
  if [ -z "$stray" ]; then
    ok scheduler "pod stray (default scheduler) unbound after $(since "$t0"): the stand-in node's agent was refused ${refused:-0} binds, the real scheduler ignores it"
  else
    bad scheduler "pod stray (default scheduler) was bound to '$stray'"
  fi
  others=$(kubectl get pods -A --field-selector "spec.nodeName=$NODE_NAME" \
    -o jsonpath='{range .items[?(@.spec.schedulerName!="'"$SCHEDULER_NAME"'")]}{.metadata.namespace}/{.metadata.name} {end}' || true)
  if [ -z "$others" ]; then
    ok scheduler "every pod on $NODE_NAME ($(pods_on_node | wc -l)) has schedulerName $SCHEDULER_NAME"
  else
    # Not a failure of the scheduler: pods may name the node directly (spec.nodeName).
    ok scheduler "pods on $NODE_NAME not placed by $SCHEDULER_NAME (they name the node themselves): $others"
  fi
}

check_services() {
  local ip pod_ip slice t code rules
  ip=$(jp svc/web '{.spec.clusterIP}')
  pod_ip=$(jp pod/web-pod '{.status.podIP}')
  kubectl -n "$CHECK_NS" wait --for=jsonpath='{.endpoints[0].conditions.ready}'=true endpointslice \
    -l kubernetes.io/service-name=web --timeout=30s >/dev/null 2>&1 || true
  slice=$(kubectl -n "$CHECK_NS" get endpointslice -l kubernetes.io/service-name=web -o jsonpath='{.items[*].endpoints[*].addresses[*]}' 2>/dev/null || true)
  if [ "$slice" = "$pod_ip" ]; then ok services "EndpointSlice of web: $slice (the pod's IP)"; else bad services "EndpointSlice of web holds '$slice', want '$pod_ip'"; fi
  # kube-proxy programs a new Service within about a second (its minimum sync period).
  local deadline=$((SECONDS + 10))
  t=$(now)
  until code=$(in_ns curl -sS -m 1 -o /dev/null -w '%{http_code}' "http://$ip/" 2>/dev/null) && [ "$code" = 200 ]; do
    [ $SECONDS -lt $deadline ] || break
    sleep 0.2
  done
  if [ "$code" = 200 ]; then
    local first; first=$(since "$t"); t=$(now)
    in_ns curl -sS -m 5 -o /dev/null "http://$ip/" 2>/dev/null
    ok services "netns -> ClusterIP web $ip:80 -> $pod_ip:8080: HTTP 200, first $first after the slice was ready, then $(since "$t")"
  else
    bad services "netns -> ClusterIP web $ip:80: '$code' for 10 s"
  fi
  t=$(now)
  code=$(in_ns curl -sS -m 5 --cacert "$PKI/ca.crt" -o /dev/null -w '%{http_code}' https://10.96.0.1/readyz 2>&1) || true
  if [ "$code" = 200 ]; then ok services "netns -> ClusterIP kubernetes 10.96.0.1:443 (API server through the bridge): HTTP 200 in $(since "$t")"; else bad services "netns -> 10.96.0.1:443: $code"; fi
  rules=$(in_ns nft list table ip kube-proxy 2>/dev/null | grep -c '^[[:space:]]*chain service-' || true)
  ok services "kube-proxy (nftables, in the netns only) programs $rules service ports; host ruleset: $(nft list ruleset 2>/dev/null | grep -c '^table' || true) tables"
}

check_dns() {
  local ip pod_ip name want got t out
  ip=$(jp svc/web '{.spec.clusterIP}')
  pod_ip=$(jp pod/web-pod '{.status.podIP}')
  for name in "web.$CHECK_NS.svc.cluster.local=$ip" "web-headless.$CHECK_NS.svc.cluster.local=$pod_ip" \
    "kubernetes.default.svc.cluster.local=10.96.0.1" "kube-dns.kube-system.svc.cluster.local=$DNS_IP"; do
    want=${name#*=} name=${name%=*} t=$(now)
    got=$(cmd_exec getent ahostsv4 "$name" 2>/dev/null | awk 'NR==1{print $1}' || true)
    if [ "$got" = "$want" ]; then ok dns "netns: $name -> $got in $(since "$t")"; else bad dns "netns: $name -> '$got', want $want"; fi
  done
  # From inside the pod, with the resolv.conf the kubelet gave it (search path, ndots 5).
  t=$(now)
  out=$(in_pod web-pod python3 -c '
import socket, urllib.request
print([l for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0].strip())
for n in ("web", "web-headless", "kubernetes.default", "metrics-server.kube-system"):
    print(n, socket.gethostbyname(n))
print("GET http://web/", urllib.request.urlopen("http://web/", timeout=5).status)
' 2>&1) || true
  want="nameserver $DNS_IP|web $ip|web-headless $pod_ip|kubernetes.default 10.96.0.1|metrics-server.kube-system $METRICS_IP|GET http://web/ 200"
  if [ "$(echo "$out" | paste -sd'|')" = "$want" ]; then
    ok dns "pod web-pod: $(echo "$out" | paste -sd';' | sed 's/;/; /g') (all in $(since "$t"))"
  else
    bad dns "pod web-pod: got '$(echo "$out" | paste -sd'|')', want '$want'"
  fi
}

check_metrics() {
  local t out avail deadline=$((SECONDS + 90))
  avail=$(kubectl get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null || true)
  if [ "$avail" = True ]; then ok metrics "APIService v1beta1.metrics.k8s.io Available (via 127.0.0.1:$METRICS_HOST_PORT)"; else bad metrics "APIService v1beta1.metrics.k8s.io Available='$avail'"; fi
  t=$(now)
  if out=$(kubectl top node "$NODE_NAME" --no-headers 2>&1); then ok metrics "kubectl top node: $(echo "$out" | tr -s ' ' | sed 's/ $//') in $(since "$t")"; else bad metrics "kubectl top node: $out"; fi
  t=$(now)
  if out=$(kubectl -n kube-system top pod --no-headers 2>&1); then ok metrics "kubectl top pod -n kube-system: $(echo "$out" | tr -s ' ' | sed 's/ $//' | paste -sd';' | sed 's/;/; /g') in $(since "$t")"; else bad metrics "kubectl top pod -n kube-system: $out"; fi
  # A new pod has metrics after metrics-server's second scrape of it (resolution 15 s).
  t=$(now)
  until out=$(kubectl -n "$CHECK_NS" top pod web-pod --no-headers 2>&1); do
    [ $SECONDS -lt $deadline ] || break
    sleep 3
  done
  if [[ $out == web-pod* ]]; then ok metrics "kubectl top pod web-pod: $(echo "$out" | tr -s ' ' | sed 's/ $//'), first answer $(since "$t") after Ready"; else bad metrics "kubectl top pod web-pod: $out"; fi
}

cmd_check() {
  live_pid node-kubelet >/dev/null || die "the real node is not up: run $0 up"
  local py t0 agent_lines
  py=$("$NODE_BIN/ctr" --address "$SOCK" -n k8s.io images ls -q 2>/dev/null | grep -m1 '/python-runtime:') ||
    die "no python-runtime image on the node: run $0 up"
  kubectl delete namespace "$CHECK_NS" --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1 || true
  trap 'kubectl delete namespace "$CHECK_NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true' EXIT
  agent_lines=$(wc -l <"$LOGS/node-agent.log" 2>/dev/null || echo 0)
  t0=$(now)
  render check.yaml | sed -e "s|@CHECK_NS@|$CHECK_NS|g; s|@PYTHON_IMAGE@|$py|g" | kubectl apply -f - >/dev/null ||
    die "creating the check's objects failed"
  check_scheduler "$t0" "$agent_lines"
  check_services
  check_dns
  check_metrics
  [ $CHECK_FAILED = 0 ] || die "check failed"
  log "check passed in $(since "$t0")"
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  check) cmd_check ;;
  exec) shift; cmd_exec "$@" ;;
  *) echo "usage: $0 up|down|status|check|exec CMD" >&2; exit 2 ;;
esac
