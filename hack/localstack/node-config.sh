# Configuration files of the node's components (sourced by stack.sh after lib.sh).

write_node_configs() {
  mkdir -p "$NODE_DIR"/{containerd,cni,kubelet,proxy,scheduler} "$NODE_RUN"
  cat >"$NODE_DIR/containerd/config.toml" <<EOF2
version = 3
root = "$NODE_DIR/containerd/root"
state = "$NODE_RUN/containerd"
[grpc]
  address = "$SOCK"
[plugins.'io.containerd.cri.v1.runtime']
  # root here may lack CAP_SYS_RESOURCE: the pause container's oom_score_adj -998 would fail.
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
EOF2
  cat >"$NODE_DIR/cni/10-bridge.conflist" <<EOF2
{"cniVersion": "1.0.0", "name": "localstack", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
           "dataDir": "$NODE_RUN/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF2
  # No upstream resolver: pods resolve cluster names only (the netns has no uplink).
  : >"$NODE_DIR/kubelet/resolv.conf"
  cat >"$NODE_DIR/kubelet/config.yaml" <<EOF2
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Hosts of this kind have hybrid cgroup v1; the kubelet refuses it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
# RuntimeDefault seccomp for every container that does not ask for another profile.
seccompDefault: true
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
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
maxPods: 250
registerNode: true
# Every test namespace has its own warm pools: many small pods on one node.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Status reaches the API server (and so the tests) soon after a container changes.
nodeStatusUpdateFrequency: 4s
EOF2
  cat >"$NODE_DIR/scheduler/config.yaml" <<EOF2
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: $PKI/kube-scheduler.kubeconfig}
leaderElection: {leaderElect: false}
EOF2
  # conntrack zeros: leave the kernel's (global) conntrack settings alone.
  cat >"$NODE_DIR/proxy/config.yaml" <<EOF2
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $PKI/kube-proxy.kubeconfig}
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
EOF2
}

netns_up() {
  [ -e "$NS_PATH" ] || ip netns add "$NETNS" || die "creating network namespace $NETNS failed"
  in_ns ip link set lo up
  # The node's address sits on the netns's loopback device: nothing outside the netns routes to it.
  in_ns ip addr replace "$NODE_IP/32" dev lo
  # No uplink: without a route, the node's own processes could not even try a ClusterIP
  # (kube-proxy's DNAT comes after the route lookup).
  in_ns ip route replace "$SERVICE_CIDR" dev lo src "$NODE_IP"
  in_ns sysctl -qw net.ipv4.ip_forward=1
  # Pod -> ClusterIP -> pod on the same bridge: the reply is bridged, and must pass
  # conntrack to be un-DNATed (per netns since Linux 5.3).
  [ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || in_ns sysctl -qw net.bridge.bridge-nf-call-iptables=1
}

# import_images imports the current tarball of every image images.sh builds (a warm run only
# hashes) and records "<name> <tarball>" lines in $RUN/images (it may run in the background).
import_images() {
  local out name tar
  out=$("$here/images.sh" 2>>"$LOGS/images.log") || die "building the images failed (log: $LOGS/images.log)"
  while read -r name tar; do
    "$STACK_BIN/ctr" --address "$SOCK" -n k8s.io images import "$tar" >/dev/null 2>>"$LOGS/images.log" ||
      die "importing $tar failed (log: $LOGS/images.log)"
  done <<<"$out"
  echo "$out" >"$RUN/images"
}

# image_names sets COREDNS_IMAGE, METRICS_SERVER_IMAGE, SANDBOXD_IMAGE and PYTHON_IMAGE from
# what import_images imported.
image_names() {
  COREDNS_IMAGE=$(awk '$1 ~ /\/coredns:/ {print $1}' "$RUN/images")
  METRICS_SERVER_IMAGE=$(awk '$1 ~ /\/metrics-server:/ {print $1}' "$RUN/images")
  SANDBOXD_IMAGE=$(awk '$1 ~ /\/sandboxd:/ {print $1}' "$RUN/images")
  PYTHON_IMAGE=$(awk '$1 ~ /\/python-runtime-sandbox:/ {print $1}' "$RUN/images")
  [ -n "$COREDNS_IMAGE" ] && [ -n "$METRICS_SERVER_IMAGE" ] && [ -n "$SANDBOXD_IMAGE" ] && [ -n "$PYTHON_IMAGE" ] ||
    die "images.sh built no coredns, metrics-server, sandboxd or python-runtime image"
}
