package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"time"
)

const (
	// Pod IPs are 127.0.0.N with N in [firstIP, lastIP]; 127.0.0.254 is the router.
	firstIP = 2
	lastIP  = 250
	// Sandbox processes of the pod with IP 127.0.0.N run as uid/gid defaultUIDBase+N: a uid
	// per pod keeps pods' files apart and lets the agent find every process a pod left behind
	// (commands started by the daemons get their own process groups and sessions).
	defaultUIDBase = 2000000
	// sandboxd v0.5.6 only binds 127.0.0.1, so each pod's sandboxd gets
	// 127.0.0.1:localPortBase+2N (REST) and +2N+1 (gRPC), forwarded from podIP:8080/9090.
	localPortBase = 20000

	pidsAnnotation = "localstack.k8s-sandbox-mcp/pids"
	pythonPort     = 8888
	sandboxdREST   = 8080
	sandboxdGRPC   = 9090
)

type config struct {
	kubeconfig    string
	nodeName      string
	podsDir       string // per-pod dirs; must be traversable by the sandbox uids
	runtimeDir    string // copies of sandboxd and main.py readable by the sandbox uids
	sandboxdBin   string
	pythonDir     string // examples/python-runtime-sandbox of the agent-sandbox module
	python        string
	dnsAddr       string
	healthAddr    string
	clusterDomain string
	kubeVersion   string
	uidBase       int
	stopGrace     time.Duration
	workers       int
}

func parseConfig(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig")
	fs.StringVar(&c.nodeName, "node-name", "localstack-node", "Node to register and bind pods to")
	fs.StringVar(&c.podsDir, "pods-dir", "", "directory for per-pod state (required)")
	fs.StringVar(&c.runtimeDir, "runtime-dir", "", "directory for daemon binaries the sandbox uids can read (required)")
	fs.StringVar(&c.sandboxdBin, "sandboxd", "", "sandboxd binary (required)")
	fs.StringVar(&c.pythonDir, "python-runtime-dir", "", "dir holding the python runtime's main.py (required)")
	fs.StringVar(&c.python, "python", "/usr/bin/python3", "python with fastapi, uvicorn and python-multipart")
	fs.StringVar(&c.dnsAddr, "dns-addr", "127.0.0.1:10053", "UDP+TCP address of the cluster DNS server")
	fs.StringVar(&c.healthAddr, "health-addr", "127.0.0.1:10054", "HTTP address serving /healthz")
	fs.StringVar(&c.clusterDomain, "cluster-domain", "cluster.local", "cluster DNS domain")
	fs.StringVar(&c.kubeVersion, "kube-version", "v1.37.2", "version reported in the Node status")
	fs.IntVar(&c.uidBase, "uid-base", defaultUIDBase, "sandbox uids are uid-base+N for pod IP 127.0.0.N")
	fs.DurationVar(&c.stopGrace, "stop-grace", 3*time.Second, "SIGTERM to SIGKILL delay when stopping a pod")
	fs.IntVar(&c.workers, "workers", 8, "pods reconciled in parallel")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for name, v := range map[string]string{"pods-dir": c.podsDir, "runtime-dir": c.runtimeDir,
		"sandboxd": c.sandboxdBin, "python-runtime-dir": c.pythonDir} {
		if v == "" {
			return c, fmt.Errorf("--%s is required", name)
		}
	}
	if c.uidBase < 1000 {
		return c, errors.New("--uid-base must be >= 1000")
	}
	return c, nil
}

// podIP returns 127.0.0.n.
func podIP(n int) net.IP { return net.IPv4(127, 0, 0, byte(n)).To4() }

// ipIndex is the inverse of podIP; ok is false for addresses outside the pod range.
func ipIndex(s string) (int, bool) {
	ip := net.ParseIP(s).To4()
	if ip == nil || ip[0] != 127 || ip[1] != 0 || ip[2] != 0 {
		return 0, false
	}
	n := int(ip[3])
	return n, n >= firstIP && n <= lastIP
}
