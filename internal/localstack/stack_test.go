//go:build e2e

package localstack

import (
	"maps"
	"testing"
)

func TestParsePIDs(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]int
		wantErr bool
	}{
		{"", map[string]int{}, false},
		{"sandboxd=12", map[string]int{"sandboxd": 12}, false},
		{"python=7,sandboxd=12", map[string]int{"python": 7, "sandboxd": 12}, false},
		{"sandboxd", nil, true},
		{"sandboxd=x", nil, true},
		{"sandboxd=0", nil, true},
		{"=5", nil, true},
	}
	for _, tt := range tests {
		got, err := parsePIDs(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !maps.Equal(got, tt.want)) {
			t.Errorf("parsePIDs(%q) = %v %v, want %v err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestConnection(t *testing.T) {
	s := &Stack{Env: map[string]string{
		"CONN_DIRECT": "K8S_SANDBOX_CONNECTION__TYPE=direct,K8S_SANDBOX_CONNECTION__API_URL=http://127.0.0.254:80",
	}}
	got, err := s.Connection("DIRECT")
	want := map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "direct", "K8S_SANDBOX_CONNECTION__API_URL": "http://127.0.0.254:80"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("Connection(DIRECT) = %v %v", got, err)
	}
	if _, err := s.Connection("NOPE"); err == nil {
		t.Error("unknown kind accepted")
	}
}
