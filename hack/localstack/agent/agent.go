package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

type agent struct {
	cfg    config
	client kubernetes.Interface
	pods   corelisters.PodLister
	svcs   corelisters.ServiceLister
	queue  workqueue.TypedRateLimitingInterface[string]
	ips    *ipam

	mu      sync.Mutex
	running map[string]*podRuntime // by namespace/name
}

func runAgent(ctx context.Context, cfg config) error {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 100, 200
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := prepareRuntimeDir(cfg); err != nil {
		return err
	}
	// Daemons of a previous agent run are unsupervised now: end them, restart them below.
	if _, err := reapUIDs(ctx, uidRange{cfg.uidBase + firstIP, cfg.uidBase + lastIP}); err != nil {
		return err
	}
	if err := registerNode(ctx, client, cfg); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	a := &agent{cfg: cfg, client: client, ips: newIPAM(), running: map[string]*podRuntime{},
		pods: factory.Core().V1().Pods().Lister(), svcs: factory.Core().V1().Services().Lister(),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](
			50*time.Millisecond, 5*time.Second))}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			a.queue.Add(key)
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("sync %v informer: %w", typ, ctx.Err())
		}
	}
	a.becomeSubreaper(ctx)
	if err := a.adoptIPs(); err != nil {
		return err
	}
	a.removeStaleDirs()

	dns, err := startDNS(ctx, cfg.dnsAddr, a.resolve)
	if err != nil {
		return err
	}
	defer dns.close()
	health := &http.Server{Addr: cfg.healthAddr, ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })}
	go func() {
		if err := health.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("health server: %v", err)
		}
	}()
	defer health.Close()

	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a.processNext(ctx) {
			}
		}()
	}
	log.Printf("node agent ready: node %s, DNS %s", cfg.nodeName, cfg.dnsAddr)
	<-ctx.Done()
	a.queue.ShutDown()
	wg.Wait()
	a.stopAll()
	return nil
}

// prepareRuntimeDir copies the daemon binaries to a directory every sandbox uid can read
// (the Go module cache and the stack's state may live under a private home) and creates
// /app, the mount point of the python runtime's base dir.
func prepareRuntimeDir(cfg config) error {
	py := filepath.Join(cfg.runtimeDir, "python")
	if err := os.MkdirAll(py, 0o755); err != nil {
		return fmt.Errorf("runtime dir: %w", err)
	}
	for src, dst := range map[string]string{
		cfg.sandboxdBin:                         filepath.Join(cfg.runtimeDir, "sandboxd"),
		filepath.Join(cfg.pythonDir, "main.py"): filepath.Join(py, "main.py"),
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("runtime dir: %w", err)
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, b, 0o755); err != nil {
			return fmt.Errorf("runtime dir: %w", err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			return fmt.Errorf("runtime dir: %w", err)
		}
	}
	if err := os.MkdirAll("/app", 0o755); err != nil {
		return fmt.Errorf("create /app mount point: %w", err)
	}
	return nil
}

// adoptIPs reserves the IPs pods on this node already have, so a restarted agent keeps them.
func (a *agent) adoptIPs() error {
	pods, err := a.pods.List(everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != a.cfg.nodeName || p.DeletionTimestamp != nil {
			continue
		}
		if n, ok := ipIndex(p.Status.PodIP); ok {
			if _, err := a.ips.allocate(p.UID, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeStaleDirs deletes pod dirs whose pod no longer exists.
func (a *agent) removeStaleDirs() {
	live := map[string]bool{}
	pods, _ := a.pods.List(everything())
	for _, p := range pods {
		live[podDirName(p)] = true
	}
	entries, _ := os.ReadDir(a.cfg.podsDir)
	for _, e := range entries {
		if !live[e.Name()] {
			_ = os.RemoveAll(filepath.Join(a.cfg.podsDir, e.Name()))
		}
	}
}

func (a *agent) processNext(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.reconcile(ctx, key); err != nil {
		// Conflicts only mean the informer has a newer pod on its way.
		if ctx.Err() == nil && !apierrors.IsConflict(err) {
			log.Printf("pod %s: %v", key, err)
		}
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

func (a *agent) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p, err := a.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		a.teardown(key, "")
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case p.Spec.NodeName == "":
		return a.bind(ctx, p)
	case p.Spec.NodeName != a.cfg.nodeName:
		return nil
	case p.DeletionTimestamp != nil:
		return a.finalize(ctx, p)
	}
	a.teardown(key, p.UID) // a previous pod of the same name
	r, err := a.ensureRuntime(p)
	if err != nil {
		return err
	}
	return a.syncPod(ctx, p, r)
}
