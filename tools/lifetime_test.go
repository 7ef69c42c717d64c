package tools

import (
	"encoding/json"
	"testing"
	"time"
)

// TestShutdownPropSaysTheCap: the schema the model reads states the server's default (within
// the caps, as config computes it), the hard cap from creation, and what null means under it.
func TestShutdownPropSaysTheCap(t *testing.T) {
	tests := []struct {
		name string
		d    Deps
		want string
	}{
		{name: "no cap", d: Deps{}, want: `{"default":300,"maximum":31536000,"minimum":1,"type":"integer"}`},
		{name: "cap", d: Deps{MaxLifetime: 24 * time.Hour},
			want: `{"default":300,"description":"No sandbox lives more than 86400 s from its creation; more is refused.","maximum":31536000,"minimum":1,"type":"integer"}`},
		{name: "short cap, default within it", d: Deps{MaxLifetime: 150 * time.Second, DefaultShutdownAfter: 150 * time.Second},
			want: `{"default":150,"description":"No sandbox lives more than 150 s from its creation; more is refused.","maximum":31536000,"minimum":1,"type":"integer"}`},
		{name: "null under the cap", d: Deps{MaxLifetime: time.Hour, AllowNoShutdown: true},
			want: `{"default":300,"description":"No sandbox lives more than 3600 s from its creation; more is refused. null: no timeout of its own, deleted at that maximum.","maximum":31536000,"minimum":1,"type":["integer","null"]}`},
		{name: "null without a cap", d: Deps{AllowNoShutdown: true},
			want: `{"default":300,"description":"null disables the timeout.","maximum":31536000,"minimum":1,"type":["integer","null"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.d.shutdownProp())
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

// TestExtendPropSaysTheCap: extend_sandbox's window states the cap too, and only with one.
func TestExtendPropSaysTheCap(t *testing.T) {
	for _, tt := range []struct {
		d    Deps
		want string
	}{
		{Deps{}, ""},
		{Deps{MaxLifetime: time.Hour}, "No sandbox lives more than 3600 s from its creation; more is refused."},
	} {
		var schema struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(extendTool(tt.d).Tool.RawInputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		if got, _ := schema.Properties["shutdown_after_seconds"]["description"].(string); got != tt.want {
			t.Errorf("MaxLifetime %v: description %q, want %q", tt.d.MaxLifetime, got, tt.want)
		}
	}
}

// TestCreateDefaultWithinTheCaps: a create that names no window gets the configured default.
func TestCreateDefaultWithinTheCaps(t *testing.T) {
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.DefaultShutdownAfter, d.MaxLifetime = 150*time.Second, 150*time.Second })
	if res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p"}); res.IsError {
		t.Fatal(text(res))
	}
	if req := h.claims.created[0]; req.ShutdownAfter == nil || *req.ShutdownAfter != 150*time.Second {
		t.Errorf("window %v, want 150s", req.ShutdownAfter)
	}
}
