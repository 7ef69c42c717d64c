package config

import (
	"testing"
	"time"
)

// TestLifetimeSettings: a window cap past the lifetime cap stops the server with one line
// naming both; the default window never exceeds either cap; no-shutdown lives with a cap.
func TestLifetimeSettings(t *testing.T) {
	tests := []struct {
		name        string
		vars        map[string]string
		wantErr     string // the exact line
		wantDefault time.Duration
		wantMaxLife time.Duration
	}{
		{name: "defaults", wantDefault: 300 * time.Second, wantMaxLife: 24 * time.Hour},
		{name: "window cap past the lifetime cap", vars: map[string]string{"MAX_SHUTDOWN_AFTER_SECONDS": "600", "MAX_LIFETIME_SECONDS": "300"},
			wantErr: "K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS (600) cannot be more than K8S_SANDBOX_MAX_LIFETIME_SECONDS (300), the longest a " +
				"sandbox lives from its creation: lower the first, or raise or unset the second"},
		{name: "window cap past the default lifetime cap", vars: map[string]string{"MAX_SHUTDOWN_AFTER_SECONDS": "172800"},
			wantErr: "K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS (172800) cannot be more than K8S_SANDBOX_MAX_LIFETIME_SECONDS (86400), the longest a " +
				"sandbox lives from its creation: lower the first, or raise or unset the second"},
		{name: "window cap equal to the lifetime cap", vars: map[string]string{"MAX_SHUTDOWN_AFTER_SECONDS": "300", "MAX_LIFETIME_SECONDS": "300"},
			wantDefault: 300 * time.Second, wantMaxLife: 300 * time.Second},
		{name: "window cap with no lifetime cap", vars: map[string]string{"MAX_SHUTDOWN_AFTER_SECONDS": "172800", "MAX_LIFETIME_SECONDS": "0"},
			wantDefault: 300 * time.Second},
		{name: "lifetime cap below the default window", vars: map[string]string{"MAX_LIFETIME_SECONDS": "150"},
			wantDefault: 150 * time.Second, wantMaxLife: 150 * time.Second},
		{name: "window cap below the default window", vars: map[string]string{"MAX_SHUTDOWN_AFTER_SECONDS": "60"},
			wantDefault: 60 * time.Second, wantMaxLife: 24 * time.Hour},
		{name: "no shutdown under the cap: the cap ends it", vars: map[string]string{"ALLOW_NO_SHUTDOWN": "true", "MAX_LIFETIME_SECONDS": "3600"},
			wantDefault: 300 * time.Second, wantMaxLife: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"}
			for k, v := range tt.vars {
				vars[Prefix+k] = v
			}
			c, err := Parse(vars)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.DefaultShutdownAfter != tt.wantDefault || c.Lifetime.MaxLifetime != tt.wantMaxLife {
				t.Errorf("default window %v, cap %v; want %v, %v", c.DefaultShutdownAfter, c.Lifetime.MaxLifetime, tt.wantDefault, tt.wantMaxLife)
			}
		})
	}
}
