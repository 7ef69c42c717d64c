package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		wantErr string // the exact line
		check   func(t *testing.T, c Config)
	}{
		{name: "general defaults", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"},
			check: func(t *testing.T, c Config) {
				if c.SessionLabelKey != "mcp.k8s-agent-sandbox/session-id" || c.ProbeNamespace != "default" || c.LogLevel != "info" {
					t.Errorf("general defaults: %+v", c)
				}
			}},
		{name: "connection errors come through", vars: map[string]string{}, wantErr: "K8S_SANDBOX_CONNECTION__TYPE is required: one of gateway, direct, in-cluster, sandboxd-in-cluster"},
		{name: "tenancy limits", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_ALLOWED_NAMESPACES": "a, b,,",
			"K8S_SANDBOX_MAX_SANDBOXES_PER_OWNER": "3", "K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS": "600"},
			check: func(t *testing.T, c Config) {
				if len(c.AllowedNamespaces) != 2 || c.AllowedNamespaces[1] != "b" || c.MaxSandboxesPerOwner != 3 ||
					c.MaxShutdownAfter != 600*time.Second || c.AllowNoShutdown || c.KeepOnSessionEnd {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "metadata keys: the built-in denials by default", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"},
			check: func(t *testing.T, c Config) {
				if !slices.Equal(c.Metadata.Denied, kube.DefaultDeniedMetadataKeys) || len(c.Metadata.Allowed) != 0 {
					t.Errorf("metadata policy %+v", c.Metadata)
				}
			}},
		{name: "metadata keys: the operator's lists", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster",
			"K8S_SANDBOX_METADATA__ALLOWED_KEYS": "example.com/*, team", "K8S_SANDBOX_METADATA__DENIED_KEYS": "example.com/secret"},
			check: func(t *testing.T, c Config) {
				if !slices.Equal(c.Metadata.Allowed, []string{"example.com/*", "team"}) || !slices.Equal(c.Metadata.Denied, []string{"example.com/secret"}) {
					t.Errorf("metadata policy %+v", c.Metadata)
				}
			}},
		{name: "tool selection", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster",
			"K8S_SANDBOX_TOOLSETS": "exec, files,", "K8S_SANDBOX_READ_ONLY": "true", "K8S_SANDBOX_DISABLE_DESTRUCTIVE": "yes"},
			check: func(t *testing.T, c Config) {
				if !slices.Equal(c.Toolsets, []string{"exec", "files"}) || !c.ReadOnly || !c.DisableDestructive {
					t.Errorf("toolsets %v, read-only %v, disable-destructive %v", c.Toolsets, c.ReadOnly, c.DisableDestructive)
				}
			}},
		{name: "pinned arguments", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster",
			"K8S_SANDBOX_PIN__NAMESPACE": "team-a", "K8S_SANDBOX_PIN__WARMPOOL": "pool-a", "K8S_SANDBOX_PIN__LABELS": "team=a,app.example.com/x=y"},
			check: func(t *testing.T, c Config) {
				if c.PinNamespace != "team-a" || c.PinWarmpool != "pool-a" || !maps.Equal(c.PinLabels, map[string]string{"team": "a", "app.example.com/x": "y"}) {
					t.Errorf("pins: %q %q %v", c.PinNamespace, c.PinWarmpool, c.PinLabels)
				}
			}},
		{name: "pinned namespace outside the allowlist", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster",
			"K8S_SANDBOX_PIN__NAMESPACE": "team-a", "K8S_SANDBOX_ALLOWED_NAMESPACES": "team-b,team-c"},
			wantErr: `K8S_SANDBOX_PIN__NAMESPACE "team-a" is not in K8S_SANDBOX_ALLOWED_NAMESPACES (team-b,team-c)`},
		{name: "pinned namespace not a name", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_PIN__NAMESPACE": "Team_A"},
			wantErr: `K8S_SANDBOX_PIN__NAMESPACE "Team_A" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{name: "pinned labels not labels", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_PIN__LABELS": "team"},
			wantErr: "K8S_SANDBOX_PIN__LABELS \"team\" is not a list of label=value pairs: invalid selector: [team]"},
		{name: "metadata keys: none denied", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_METADATA__DENIED_KEYS": "none"},
			check: func(t *testing.T, c Config) {
				if len(c.Metadata.Denied) != 0 {
					t.Errorf("denied %v, want none", c.Metadata.Denied)
				}
			}},
		{name: "no shutdown refused by default", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"},
			check: func(t *testing.T, c Config) {
				if c.AllowNoShutdown {
					t.Error("shutdown_after_seconds=null must need the operator's explicit K8S_SANDBOX_ALLOW_NO_SHUTDOWN=true")
				}
			}},
		{name: "no shutdown allowed explicitly", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_ALLOW_NO_SHUTDOWN": "true"},
			check: func(t *testing.T, c Config) {
				if !c.AllowNoShutdown {
					t.Error("K8S_SANDBOX_ALLOW_NO_SHUTDOWN=true not read")
				}
			}},
		{name: "no shutdown contradicts a maximum", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster",
			"K8S_SANDBOX_ALLOW_NO_SHUTDOWN": "yes", "K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS": "600"},
			wantErr: "K8S_SANDBOX_ALLOW_NO_SHUTDOWN cannot be true with K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS=600: a sandbox without a timeout has no maximum; unset one of them"},
		{name: "no shutdown refused explicitly with a maximum", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster",
			"K8S_SANDBOX_ALLOW_NO_SHUTDOWN": "false", "K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS": "600"},
			check: func(t *testing.T, c Config) {
				if c.AllowNoShutdown || c.MaxShutdownAfter != 600*time.Second {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "suspension defaults", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"},
			check: func(t *testing.T, c Config) {
				if c.AutoResume || c.SuspendPausesLifetime {
					t.Errorf("auto-resume %v, suspend pauses lifetime %v; want both off", c.AutoResume, c.SuspendPausesLifetime)
				}
			}},
		{name: "suspension settings", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster",
			"K8S_SANDBOX_AUTO_RESUME": "true", "K8S_SANDBOX_SUSPEND_PAUSES_LIFETIME": "true"},
			check: func(t *testing.T, c Config) {
				if !c.AutoResume || !c.SuspendPausesLifetime {
					t.Errorf("auto-resume %v, suspend pauses lifetime %v; want both on", c.AutoResume, c.SuspendPausesLifetime)
				}
			}},
		{name: "auto-resume not a bool", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_AUTO_RESUME": "sometimes"},
			wantErr: `K8S_SANDBOX_AUTO_RESUME must be true or false, got "sometimes"`},
		{name: "no shutdown not a bool", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_ALLOW_NO_SHUTDOWN": "always"},
			wantErr: `K8S_SANDBOX_ALLOW_NO_SHUTDOWN must be true or false, got "always"`},
		{name: "bad quota", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_MAX_SANDBOXES_PER_OWNER": "-1"}, wantErr: `K8S_SANDBOX_MAX_SANDBOXES_PER_OWNER must be an integer from 0 to 100000, got "-1"`},
		{name: "API rate limit defaults", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"},
			check: func(t *testing.T, c Config) {
				if c.APIQPS != kube.DefaultQPS || c.APIBurst != kube.DefaultBurst {
					t.Errorf("API rate limit %d/%d", c.APIQPS, c.APIBurst)
				}
			}},
		{name: "API rate limit off", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_API_QPS": "-1"},
			check: func(t *testing.T, c Config) {
				if c.APIQPS != kube.NoRateLimit {
					t.Errorf("API QPS %d", c.APIQPS)
				}
			}},
		{name: "API rate zero", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_API_QPS": "0"},
			wantErr: "K8S_SANDBOX_API_QPS with K8S_SANDBOX_API_BURST: invalid request: API rate limit 0/s with burst 200: both must be positive (or the rate -1 for no client-side limit)"},
		{name: "API burst not a number", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_API_BURST": "lots"},
			wantErr: `K8S_SANDBOX_API_BURST must be an integer from 0 to 1000000, got "lots"`},
		{name: "archive expansion bound default", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"},
			check: func(t *testing.T, c Config) {
				if c.MaxArchiveExpandedBytes != workspace.DefaultMaxExpandedBytes {
					t.Errorf("archive expansion bound %d", c.MaxArchiveExpandedBytes)
				}
			}},
		{name: "archive expansion bound", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES": "4294967296"},
			check: func(t *testing.T, c Config) {
				if c.MaxArchiveExpandedBytes != 4<<30 {
					t.Errorf("archive expansion bound %d", c.MaxArchiveExpandedBytes)
				}
			}},
		{name: "archive expansion bound zero", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES": "0"},
			wantErr: `K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES must be an integer from 1 to 1099511627776, got "0"`},
		{name: "transfer cap default", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster"},
			check: func(t *testing.T, c Config) {
				if c.MaxTransferBytes != transfer.DefaultMaxBytes {
					t.Errorf("transfer cap %d", c.MaxTransferBytes)
				}
			}},
		{name: "transfer cap", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_MAX_TRANSFER_BYTES": "1099511627776"},
			check: func(t *testing.T, c Config) {
				if c.MaxTransferBytes != 1<<40 {
					t.Errorf("transfer cap %d", c.MaxTransferBytes)
				}
			}},
		{name: "transfer cap zero", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_MAX_TRANSFER_BYTES": "0"},
			wantErr: `K8S_SANDBOX_MAX_TRANSFER_BYTES must be an integer from 1 to 1099511627776, got "0"`},
		{name: "unknown variable reported", vars: map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_CONECTION__USE_POD_IP": "true", "K8S_SANDBOX_CONNECTION__API_URL": "x"},
			check: func(t *testing.T, c Config) {
				if len(c.Unknown) != 1 || c.Unknown[0] != "K8S_SANDBOX_CONECTION__USE_POD_IP" {
					t.Errorf("unknown = %v", c.Unknown)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.vars)
			if tt.wantErr != "" {
				var ce *Error
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &ce) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	dot := filepath.Join(dir, ".env")
	explicit := filepath.Join(dir, "explicit.env")
	must(t, os.WriteFile(dot, []byte("K8S_SANDBOX_CONNECTION__TYPE=direct\nK8S_SANDBOX_CONNECTION__API_URL=http://dot\nK8S_SANDBOX_PROBE_NAMESPACE=dotns\n"), 0o600))
	must(t, os.WriteFile(explicit, []byte("K8S_SANDBOX_CONNECTION__API_URL=http://explicit\nK8S_SANDBOX_PROBE_NAMESPACE=explicitns\n"), 0o600))
	c, err := Load(Source{DotEnv: dot, EnvFile: explicit, Environ: []string{"K8S_SANDBOX_PROBE_NAMESPACE=envns", "PATH=/bin"}})
	must(t, err)
	if c.Connection.APIURL != "http://explicit" || c.ProbeNamespace != "envns" {
		t.Errorf("precedence wrong: %+v", c)
	}
	if _, err := Load(Source{EnvFile: filepath.Join(dir, "missing.env")}); err == nil {
		t.Error("a missing --env-file must be an error")
	}
	if _, err := Load(Source{DotEnv: filepath.Join(dir, "missing.env"), Environ: []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"}}); err != nil {
		t.Errorf("a missing .env is fine: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
