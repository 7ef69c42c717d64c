package main

import (
	"net/http/httptest"
	"testing"
)

func TestRequestKey(t *testing.T) {
	for _, c := range []struct{ method, target, want string }{
		{"PATCH", "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims/c1", "PATCH sandboxclaims"},
		{"GET", "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims/c1", "GET sandboxclaims"},
		{"GET", "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims?limit=500", "LIST sandboxclaims"},
		{"GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes?watch=true", "WATCH sandboxes"},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", "GET pods"},
		{"POST", "/api/v1/namespaces/ns/events", "POST events"},
		{"GET", "/api/v1/namespaces", "LIST namespaces"},
		{"GET", "/api/v1/namespaces/ns", "GET namespaces"},
		{"GET", "/apis/agents.x-k8s.io/v1beta1", "GET /apis/agents.x-k8s.io/v1beta1"},
	} {
		if got := requestKey(httptest.NewRequest(c.method, c.target, nil)); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.target, got, c.want)
		}
	}
}
