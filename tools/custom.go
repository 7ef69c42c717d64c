package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// collectTimeout bounds the sweep of unused custom pools that follows a custom create.
const collectTimeout = 30 * time.Second

// Sandboxes built to order (create_sandbox's image, cpus, memory): kube derives a template and
// a pool from warmpool's; the operator's kube.CustomPolicy says which images and how much.

func (d Deps) imageProp() prop {
	// Listed only where custom sandboxes are on (withheldArgs).
	desc := "Container image to run instead of the warm pool's (its first container's); the pool's template is the base. " +
		fmt.Sprintf("Allowed here: %s (an entry ending in * is a prefix). ", strings.Join(d.Custom.AllowedImages, ", "))
	return prop{"type": "string", "minLength": 1, "maxLength": 512, "pattern": `^[^\s]+$`,
		"description": desc + "The image must contain the pool's runtime; the sandbox starts fresh, which takes longer than a warm one."}
}

func (d Deps) cpusProp() prop {
	return prop{"type": "number", "exclusiveMinimum": 0, "maximum": float64(d.maxCPUMillis()) / 1000,
		"description": fmt.Sprintf("CPU limit of the sandbox in CPUs (e.g. 0.5 or 2; at most %g). Builds the sandbox to order like image.",
			float64(d.maxCPUMillis())/1000)}
}

func (d Deps) memoryProp() prop {
	return prop{"type": "integer", "minimum": kube.MinCustomMemoryMiB, "maximum": d.maxMemoryMiB(),
		"description": fmt.Sprintf("Memory limit of the sandbox in MiB (%d-%d). Builds the sandbox to order like image.",
			kube.MinCustomMemoryMiB, d.maxMemoryMiB())}
}

func (d Deps) maxCPUMillis() int64 {
	if d.Custom.MaxCPUMillis > 0 {
		return d.Custom.MaxCPUMillis
	}
	return kube.DefaultCustomMaxCPUMillis
}

func (d Deps) maxMemoryMiB() int64 {
	if d.Custom.MaxMemoryMiB > 0 {
		return d.Custom.MaxMemoryMiB
	}
	return kube.DefaultCustomMaxMemoryMiB
}

// customPool returns the pool to claim from: warmpool itself, or, with image, cpus or memory,
// the pool derived from it (custom true).
func (d Deps) customPool(ctx context.Context, ns string, a createArgs) (string, bool, error) {
	if a.Image == "" && a.Cpus == nil && a.Memory == nil {
		return a.Warmpool, false, nil
	}
	if !d.Custom.Enabled() {
		return "", false, badInput("%s", errNoCustom)
	}
	if a.Image != "" && !d.Custom.AllowsImage(a.Image) {
		return "", false, badInput("image %q is not allowed on this server; allowed: %s (an entry ending in * is a prefix). "+
			"Leave image out to keep the pool's, or use one of those.", a.Image, strings.Join(d.Custom.AllowedImages, ", "))
	}
	spec := kube.CustomSpec{BasePool: a.Warmpool, Image: a.Image}
	if a.Cpus != nil {
		spec.CPUMillis = max(int64(math.Round(*a.Cpus*1000)), 1)
	}
	if a.Memory != nil {
		spec.MemoryMiB = *a.Memory
	}
	pool, err := d.Claims.EnsureCustomPool(ctx, ns, spec)
	if errors.Is(err, kube.ErrUnmarked) {
		d.Log.Warn().Err(err).Str("namespace", ns).Str("pool", pool).Msg("custom warm pool in use but not marked so")
		err = nil
	}
	if errors.Is(err, kube.ErrBaseMissing) {
		return "", false, badInput("%v. warmpool names the pool whose template a sandbox built to order starts from: "+
			"list_sandbox_templates shows them", err)
	}
	if err != nil {
		return "", false, err
	}
	// Unused custom pools of this namespace go now, off the call's path (one sweep per
	// namespace at a time); the TTL protects the ones in use elsewhere.
	go func() {
		_, _, _ = d.collecting.Do(ns, func() (any, error) {
			d.collectCustomPools(context.WithoutCancel(ctx), ns)
			return nil, nil
		})
	}()
	return pool, true, nil
}

func (d Deps) collectCustomPools(ctx context.Context, ns string) {
	ctx, cancel := context.WithTimeout(ctx, collectTimeout)
	defer cancel()
	ttl := d.Custom.UnusedTTL
	if ttl <= 0 {
		ttl = kube.DefaultCustomUnusedTTL
	}
	deleted, err := d.Claims.CollectCustomPools(ctx, ns, ttl)
	if err != nil {
		d.Log.Warn().Err(err).Str("namespace", ns).Msg("collecting unused custom warm pools")
	}
	if len(deleted) > 0 {
		d.Log.Info().Strs("pools", deleted).Str("namespace", ns).Msg("deleted unused custom warm pools")
	}
}
