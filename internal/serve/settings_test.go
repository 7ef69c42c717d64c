package serve

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadHTTPSettings(t *testing.T) {
	tests := []struct {
		name      string
		vars      map[string]string
		maxResult int64
		want      HTTPSettings
		wantErr   string
	}{
		{name: "defaults", vars: map[string]string{},
			want: HTTPSettings{MaxBodyBytes: 8 << 20, MaxBodyBytesInFlight: 32 << 20, MaxBodyBytesInFlightPerPrincipal: 16 << 20, MaxConcurrentCalls: 8, ReadTimeout: time.Minute,
				MaxSessions: 1024, MaxSessionsPerPrincipal: 64, MaxStreamsPerPrincipal: 64, UnusedSessionTTL: time.Minute, MaxInitializeBytes: 32 << 10}},
		{name: "all set", vars: map[string]string{
			VarAllowedOrigins: " https://App.Example.com:443, http://tool.local:8080/ ,", VarMaxBodyBytes: "1048576",
			VarMaxConcurrentCalls: "3", VarReadTimeout: "5", VarMaxSessions: "100", VarMaxSessionsPerPrincipal: "4",
			VarMaxStreamsPerPrincipal: "7", VarUnusedSessionTTL: "10", VarMaxInitializeBytes: "2048", VarDrainSeconds: "5"},
			want: HTTPSettings{AllowedOrigins: []string{"https://app.example.com", "http://tool.local:8080"},
				MaxBodyBytes: 1 << 20, MaxBodyBytesInFlight: 4 << 20, MaxBodyBytesInFlightPerPrincipal: 2 << 20, MaxConcurrentCalls: 3, ReadTimeout: 5 * time.Second,
				MaxSessions: 100, MaxSessionsPerPrincipal: 4, MaxStreamsPerPrincipal: 7, UnusedSessionTTL: 10 * time.Second, MaxInitializeBytes: 2048, Drain: 5 * time.Second}},
		{name: "in-flight bounds set", vars: map[string]string{VarMaxBodyBytesInFlight: "100000000", VarMaxBodyBytesInFlightPerPrincipal: "9000000"},
			want: HTTPSettings{MaxBodyBytes: 8 << 20, MaxBodyBytesInFlight: 100_000_000, MaxBodyBytesInFlightPerPrincipal: 9_000_000, MaxConcurrentCalls: 8,
				ReadTimeout: time.Minute, MaxSessions: 1024, MaxSessionsPerPrincipal: 64, MaxStreamsPerPrincipal: 64, UnusedSessionTTL: time.Minute, MaxInitializeBytes: 32 << 10}},
		{name: "defaults under a large result", vars: map[string]string{}, maxResult: 44_804_780,
			want: HTTPSettings{MaxBodyBytes: 8 << 20, MaxBodyBytesInFlight: 53_193_388, MaxBodyBytesInFlightPerPrincipal: 53_193_388, MaxResultBytes: 44_804_780,
				MaxConcurrentCalls: 8, ReadTimeout: time.Minute, MaxSessions: 1024, MaxSessionsPerPrincipal: 64, MaxStreamsPerPrincipal: 64, UnusedSessionTTL: time.Minute, MaxInitializeBytes: 32 << 10}},
		{name: "defaults under a small result", vars: map[string]string{}, maxResult: 1 << 20,
			want: HTTPSettings{MaxBodyBytes: 8 << 20, MaxBodyBytesInFlight: 32 << 20, MaxBodyBytesInFlightPerPrincipal: 16 << 20, MaxResultBytes: 1 << 20,
				MaxConcurrentCalls: 8, ReadTimeout: time.Minute, MaxSessions: 1024, MaxSessionsPerPrincipal: 64, MaxStreamsPerPrincipal: 64, UnusedSessionTTL: time.Minute, MaxInitializeBytes: 32 << 10}},
		{name: "per principal in flight below the largest result", vars: map[string]string{VarMaxBodyBytesInFlightPerPrincipal: "20000000"}, maxResult: 44_804_780,
			wantErr: VarMaxBodyBytesInFlightPerPrincipal + " must be at least 44804780, got 20000000: a download at K8S_SANDBOX_MAX_DOWNLOAD_BYTES"},
		{name: "total in flight below a large result's share", vars: map[string]string{VarMaxBodyBytesInFlight: "40000000"}, maxResult: 44_804_780,
			wantErr: VarMaxBodyBytesInFlight + " must be at least " + VarMaxBodyBytesInFlightPerPrincipal + " (53193388), got 40000000"},
		{name: "per principal in flight below the body cap", vars: map[string]string{VarMaxBodyBytesInFlightPerPrincipal: "1048576"},
			wantErr: VarMaxBodyBytesInFlightPerPrincipal + " must be at least " + VarMaxBodyBytes + " (8388608), got 1048576"},
		{name: "total in flight below the default share", vars: map[string]string{VarMaxBodyBytesInFlight: "9000000"},
			wantErr: VarMaxBodyBytesInFlight + " must be at least " + VarMaxBodyBytesInFlightPerPrincipal + " (16777216), got 9000000"},
		{name: "in flight too small", vars: map[string]string{VarMaxBodyBytesInFlight: "1000"}, wantErr: VarMaxBodyBytesInFlight + " must be an integer from 65536"},
		{name: "origin with path", vars: map[string]string{VarAllowedOrigins: "https://app.example.com/ui"}, wantErr: VarAllowedOrigins + `: "https://app.example.com/ui" is not an origin`},
		{name: "wildcard origin", vars: map[string]string{VarAllowedOrigins: "*"}, wantErr: VarAllowedOrigins + `: "*" is not an origin`},
		{name: "subdomain wildcard", vars: map[string]string{VarAllowedOrigins: "https://*.example.com"}, wantErr: "is not an origin"},
		{name: "body too small", vars: map[string]string{VarMaxBodyBytes: "1000"}, wantErr: VarMaxBodyBytes + " must be an integer from 65536"},
		{name: "calls not a number", vars: map[string]string{VarMaxConcurrentCalls: "many"}, wantErr: VarMaxConcurrentCalls + " must be an integer from 1 to 1024"},
		{name: "timeout zero", vars: map[string]string{VarReadTimeout: "0"}, wantErr: VarReadTimeout + " must be an integer from 1"},
		{name: "no sessions", vars: map[string]string{VarMaxSessions: "0"}, wantErr: VarMaxSessions + " must be an integer from 1 to 1000000"},
		{name: "per principal negative", vars: map[string]string{VarMaxSessionsPerPrincipal: "-1"}, wantErr: VarMaxSessionsPerPrincipal + " must be an integer from 1"},
		{name: "no streams", vars: map[string]string{VarMaxStreamsPerPrincipal: "0"}, wantErr: VarMaxStreamsPerPrincipal + " must be an integer from 1 to 1000000"},
		{name: "unused ttl with unit", vars: map[string]string{VarUnusedSessionTTL: "60s"}, wantErr: VarUnusedSessionTTL + ` must be an integer from 1 to 86400, got "60s"`},
		{name: "drain too long", vars: map[string]string{VarDrainSeconds: "301"}, wantErr: VarDrainSeconds + " must be an integer from 0 to 300"},
		{name: "initialize too small", vars: map[string]string{VarMaxInitializeBytes: "100"}, wantErr: VarMaxInitializeBytes + " must be an integer from 1024 to 1048576"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadHTTPSettings(tc.vars, tc.maxResult)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestCheckExposure(t *testing.T) {
	tests := []struct {
		addr           string
		auth, insecure bool
		wantErr, warn  bool
	}{
		{addr: "127.0.0.1:8000"},
		{addr: "localhost:8000"},
		{addr: "[::1]:8000"},
		{addr: "127.0.0.1:8000", insecure: true},
		{addr: "0.0.0.0:8000", wantErr: true},
		{addr: ":8000", wantErr: true},
		{addr: "[::]:8000", wantErr: true},
		{addr: "10.1.2.3:8000", wantErr: true},
		{addr: "mcp.internal:8000", wantErr: true},
		{addr: "0.0.0.0:8000", auth: true},
		{addr: ":8000", insecure: true, warn: true},
		{addr: "mcp.internal:8000", insecure: true, warn: true},
		{addr: "8000", wantErr: true},
	}
	for _, tc := range tests {
		warn, err := CheckExposure(tc.addr, tc.auth, tc.insecure)
		if (err != nil) != tc.wantErr || (warn != "") != tc.warn {
			t.Errorf("CheckExposure(%q, auth=%v, insecure=%v) = %q, %v", tc.addr, tc.auth, tc.insecure, warn, err)
		}
		if err != nil && tc.addr != "8000" && !strings.Contains(err.Error(), "--insecure-no-auth") {
			t.Errorf("error does not name the way out: %v", err)
		}
	}
}
