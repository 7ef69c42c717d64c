// Command kube-router is upstream's kube-router (github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
// running its network policy controller alone, as the stack runs it, with one change: the
// controller's full syncs are at most one per minSyncInterval. Upstream runs a full sync (an
// iptables-save, an iptables-restore and about ten iptables and ipset processes) for every pod
// event that touches policy, back to back while pods come and go: in the stack's e2e phase
// that was 70 to 90 syncs a minute and about a fifth of the two cores' busy time (perf). Here
// the events that upstream's handlers would act on request the sync through Kubernetes'
// BoundedFrequencyRunner, which kube-proxy uses for the same purpose (its minSyncPeriod): the
// first event after a quiet spell syncs at once, the ones that follow within the interval
// together. Flags, informers, the health endpoint and the controller are upstream's
// (pkg/cmd.KubeRouter.Run).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/cloudnativelabs/kube-router/v2/pkg/version"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/proxy/runner"
)

// minSyncInterval bounds how often pod, namespace and policy events start a full sync. A new
// pod's rules come at most this much later than upstream's would (kube-proxy's default is 1 s);
// the stack's pods become claimable only once ready, after at least one 2 s readiness period.
const minSyncInterval = 2 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-router:", err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	// As upstream's main: klog's flags are set from kube-router's own.
	if err := flag.Set("logtostderr", "true"); err != nil {
		return err
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.Version {
		version.PrintVersion(false)
		return nil
	}
	if !config.RunFirewall || config.RunRouter || config.RunServiceProxy || config.RunLoadBalancer {
		return fmt.Errorf("this build runs the network policy controller alone: --run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false")
	}
	version.PrintVersion(true)
	restConfig, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return fmt.Errorf("client configuration: %w", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}

	var wg sync.WaitGroup
	var ipsetMutex sync.Mutex
	stopCh := make(chan struct{})
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	hc, err := healthcheck.NewHealthController(config)
	if err != nil {
		return fmt.Errorf("health controller: %w", err)
	}
	wg.Add(1)
	go hc.RunServer(stopCh, &wg)

	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	nsInformer := factory.Core().V1().Namespaces().Informer()
	npInformer := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stopCh)
	synced := make(chan struct{})
	go func() { factory.WaitForCacheSync(stopCh); close(synced) }()
	select {
	case <-synced:
	case <-time.After(config.CacheSyncTimeout):
		return fmt.Errorf("informer caches not synced within %v", config.CacheSyncTimeout)
	}
	hc.SetAlive()
	wg.Add(1)
	go hc.RunCheck(healthChan, stopCh, &wg)

	iptablesHandlers, ipsetHandlers, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return fmt.Errorf("iptables handlers: %w", err)
	}
	npc, err := netpol.NewNetworkPolicyController(client, config, podInformer, npInformer, nsInformer,
		&ipsetMutex, iptablesHandlers, ipsetHandlers)
	if err != nil {
		return fmt.Errorf("network policy controller: %w", err)
	}
	// maxInterval: the controller's own periodic sync (--iptables-sync-period) covers drift.
	bfr := runner.NewBoundedFrequencyRunner("network policy sync", func() error { npc.RequestFullSync(); return nil },
		minSyncInterval, time.Hour, time.Hour)
	go bfr.Loop(stopCh)
	// Upstream's handlers request a sync per event themselves; these request it from the runner.
	for informer, relevant := range map[cache.SharedIndexInformer]func(old, obj any) bool{
		podInformer: podEventRelevant,
		nsInformer:  namespaceEventRelevant,
		npInformer:  func(_, _ any) bool { return true },
	} {
		if _, err := informer.AddEventHandler(syncOn(relevant, bfr.Run)); err != nil {
			return fmt.Errorf("event handler: %w", err)
		}
	}
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	klog.Info("Shutting down the controllers")
	close(stopCh)
	wg.Wait()
	return nil
}

// syncOn returns a handler that calls sync for every event relevant says matters (old is nil
// for an added or deleted object).
func syncOn(relevant func(old, obj any) bool, sync func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if relevant(nil, obj) {
				sync()
			}
		},
		UpdateFunc: func(old, obj any) {
			if relevant(old, obj) {
				sync()
			}
		},
		DeleteFunc: func(any) { sync() },
	}
}

// namespaceEventRelevant is upstream's filter of namespace events (namespace.go): an update
// matters when the labels change (namespaceSelectors select by them).
func namespaceEventRelevant(old, obj any) bool {
	ns, ok := obj.(*corev1.Namespace)
	was, wasNS := old.(*corev1.Namespace)
	return old == nil || !ok || !wasNS || !reflect.DeepEqual(ns.Labels, was.Labels)
}

// podEventRelevant is upstream's filter of pod events (pkg/controllers/netpol/pod.go and
// utils.go, unexported): a pod is added once it has an IP and runs off the host's network, and
// an update matters when its phase, IPs, host or labels change.
func podEventRelevant(old, obj any) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	if old == nil {
		finished := pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded ||
			pod.Status.Phase == netpol.PodCompleted
		return !finished && pod.Status.PodIP != "" && !pod.Spec.HostNetwork
	}
	was, ok := old.(*corev1.Pod)
	if !ok {
		return false
	}
	return pod.Status.Phase != was.Status.Phase || pod.Status.PodIP != was.Status.PodIP ||
		!reflect.DeepEqual(pod.Status.PodIPs, was.Status.PodIPs) || pod.Status.HostIP != was.Status.HostIP ||
		!reflect.DeepEqual(pod.Labels, was.Labels)
}
