package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func (a *agent) bind(ctx context.Context, p *corev1.Pod) error {
	err := a.client.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: a.cfg.nodeName},
	}, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone or already bound; the informer brings the new state
	}
	if err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

func (a *agent) ensureRuntime(p *corev1.Pod) (*podRuntime, error) {
	key := p.Namespace + "/" + p.Name
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.running[key]; r != nil {
		return r, nil
	}
	prefer, _ := ipIndex(p.Status.PodIP)
	n, err := a.ips.allocate(p.UID, prefer)
	if err != nil {
		return nil, err
	}
	r, err := a.startPodRuntime(p, n, func() { a.queue.Add(key) })
	if err != nil {
		a.ips.release(p.UID, n)
		return nil, err
	}
	a.running[key] = r
	log.Printf("pod %s: started on %s (uid %d)", key, r.ip(), r.sboxUID)
	return r, nil
}

// teardown stops the runtime of key unless it belongs to keep, frees its IP and removes its dir.
func (a *agent) teardown(key string, keep types.UID) {
	a.mu.Lock()
	r := a.running[key]
	if r == nil || r.uid == keep {
		a.mu.Unlock()
		return
	}
	delete(a.running, key)
	a.mu.Unlock()
	r.stop()
	a.ips.release(r.uid, r.n)
	if err := os.RemoveAll(r.dir); err != nil {
		log.Printf("pod %s: remove dir: %v", key, err)
	}
	log.Printf("pod %s: stopped, %s freed", key, r.ip())
}

// finalize plays the kubelet's part of a graceful deletion: stop everything, then remove the
// pod for good, guarded by its UID so a new pod of the same name is never deleted.
func (a *agent) finalize(ctx context.Context, p *corev1.Pod) error {
	a.teardown(p.Namespace+"/"+p.Name, "")
	if n, ok := ipIndex(p.Status.PodIP); ok {
		a.ips.release(p.UID, n)
	}
	_ = os.RemoveAll(filepath.Join(a.cfg.podsDir, podDirName(p)))
	zero := int64(0)
	err := a.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

func (a *agent) stopAll() {
	a.mu.Lock()
	keys := make([]string, 0, len(a.running))
	for k := range a.running {
		keys = append(keys, k)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() { defer wg.Done(); a.teardownKeepDir(k) }()
	}
	wg.Wait()
}

// teardownKeepDir stops a runtime at agent shutdown; the pod still exists, so its dir stays
// for a later agent to adopt.
func (a *agent) teardownKeepDir(key string) {
	a.mu.Lock()
	r := a.running[key]
	delete(a.running, key)
	a.mu.Unlock()
	if r != nil {
		r.stop()
	}
}
