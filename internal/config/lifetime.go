package config

import (
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// checkLifetime refuses a window cap the lifetime cap contradicts and sets the default window
// within both caps. The lifetime cap (MAX_LIFETIME_SECONDS, enforced by the kube client on
// create, extend, renewal, suspension and resume) bounds every shutdown time from creation:
// a larger MAX_SHUTDOWN_AFTER_SECONDS would promise in the schema windows that every create
// and extend then refuses, so the server does not start with it. ALLOW_NO_SHUTDOWN does not
// contradict the cap: null is "no timeout of its own", and the cap still ends the sandbox.
func (c *Config) checkLifetime(p *parser) {
	maxLife := c.Lifetime.MaxLifetime
	if maxLife > 0 && c.MaxShutdownAfter > maxLife {
		p.fail("MAX_SHUTDOWN_AFTER_SECONDS", "(%d) cannot be more than %sMAX_LIFETIME_SECONDS (%d), the longest a sandbox lives from its creation: "+
			"lower the first, or raise or unset the second", int(c.MaxShutdownAfter/time.Second), Prefix, int(maxLife/time.Second))
	}
	// A default past a cap would make every create that names no window fail; a cap below
	// the spec's default is a deliberate choice of short-lived sandboxes, so the default follows it.
	c.DefaultShutdownAfter = kube.DefaultShutdownAfter
	for _, limit := range []time.Duration{c.MaxShutdownAfter, maxLife} {
		if limit > 0 && limit < c.DefaultShutdownAfter {
			c.DefaultShutdownAfter = limit
		}
	}
}
