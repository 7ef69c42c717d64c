//go:build e2e

package localstack

import (
	"maps"
	"testing"
)

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
