# stop_all (sourced by stack.sh after lib.sh): stops every component and removes what the node
# left: containers, pod network namespaces, mounts, cgroups, the stack's netns.

# kill_pods kills every process in the pods' cgroups (containers outlive their shims).
kill_pods() {
  local procs
  for procs in /sys/fs/cgroup/*/kubepods*/cgroup.procs /sys/fs/cgroup/*/kubepods*/*/cgroup.procs \
    /sys/fs/cgroup/*/kubepods*/*/*/cgroup.procs /sys/fs/cgroup/*/kubepods*/*/*/*/cgroup.procs \
    /sys/fs/cgroup/kubepods*/cgroup.procs /sys/fs/cgroup/kubepods*/*/cgroup.procs \
    /sys/fs/cgroup/kubepods*/*/*/cgroup.procs /sys/fs/cgroup/kubepods*/*/*/*/cgroup.procs; do
    # A cgroup can vanish between the test and the read (its pod just ended): no message.
    { [ -f "$procs" ] && xargs -r kill -KILL <"$procs"; } 2>/dev/null || true
  done
}

stop_all() {
  local name comps
  comps=$(echo "$COMPONENTS" | tr ' ' '\n' | tac)
  for name in $comps; do
    # The kubelet first stops nothing: its pods are killed below, all at once.
    stop_one "$name" 5
    [ "$name" != kubelet ] || kill_pods
  done
  kill_pods
  # Whatever still runs in the netns (shims whose containerd is gone, a test's leftovers).
  if [ -e "$NS_PATH" ]; then
    ip netns pids "$NETNS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    local deadline=$((SECONDS + 5))
    while [ -n "$(ip netns pids "$NETNS" 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  fi
  # The pods' own network namespaces, made by containerd for the CNI plugins.
  ip netns list 2>/dev/null | awk '/^cni-/{print $1}' | xargs -r -n1 ip netns del 2>/dev/null || true
  grep -E " ($NODE_DIR|$NODE_RUN)/[^ ]*" /proc/self/mounts | awk '{print $2}' | sort -r |
    xargs -r -n1 umount -l 2>/dev/null || true
  # Pods and containers of this run mean nothing to the next (etcd starts empty): the node's
  # state goes, the images are imported again.
  rm -rf "${NODE_DIR:?}/containerd/root" "${NODE_DIR:?}/kubelet/root" "${NODE_RUN:?}/containerd" "${NODE_RUN:?}/ipam"
  # Volumes of the hostpath provisioner (storageclass.yaml) that outlived their claims.
  rm -rf /tmp/hostpath_pv
  find /sys/fs/cgroup/ -depth -type d -path '*kubepods*' -exec rmdir {} + 2>/dev/null || true
  if [ -e "$NS_PATH" ] && ! in_stack_netns; then
    ip netns del "$NETNS" 2>/dev/null || true
    if mountpoint -q "$HOSTNET"; then umount "$HOSTNET" 2>/dev/null || true; fi
    # `ip netns add` made /run/netns a mount point; gone with the last namespace in it.
    if mountpoint -q /run/netns && [ -z "$(ls -A /run/netns)" ]; then umount /run/netns 2>/dev/null || true; fi
  fi
  rm -rf "${RUN:?}/env"
}
