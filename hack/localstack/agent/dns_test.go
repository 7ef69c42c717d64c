package main

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func query(t *testing.T, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 42, RecursionDesired: true})
	_ = b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAnswer(t *testing.T) {
	known := func(name string) ([]net.IP, bool) {
		if name == "sbx.ns.svc.cluster.local." {
			return []net.IP{net.IPv4(127, 0, 0, 9)}, true
		}
		return nil, false
	}
	tests := []struct {
		name    string
		qname   string
		qtype   dnsmessage.Type
		rcode   dnsmessage.RCode
		answers []string
	}{
		{"A of a known name", "sbx.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"127.0.0.9"}},
		{"AAAA of a known name is empty", "sbx.ns.svc.cluster.local.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, nil},
		{"unknown name", "nope.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, ok := answer(query(t, tt.qname, tt.qtype), known)
			if !ok {
				t.Fatal("no response")
			}
			var p dnsmessage.Parser
			h, err := p.Start(resp)
			if err != nil {
				t.Fatal(err)
			}
			if h.ID != 42 || !h.Response || h.RCode != tt.rcode {
				t.Fatalf("header %+v", h)
			}
			_ = p.SkipAllQuestions()
			var got []string
			for {
				rh, err := p.AnswerHeader()
				if errors.Is(err, dnsmessage.ErrSectionDone) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				a, err := p.AResource()
				if err != nil || rh.Type != dnsmessage.TypeA {
					t.Fatalf("answer %v %v", rh, err)
				}
				got = append(got, net.IP(a.A[:]).String())
			}
			if len(got) != len(tt.answers) || (len(got) > 0 && got[0] != tt.answers[0]) {
				t.Errorf("answers %v, want %v", got, tt.answers)
			}
		})
	}
	if _, ok := answer([]byte{1, 2, 3}, known); ok {
		t.Error("answered garbage")
	}
}

func readyPod(ns, name, ip string, lbls map[string]string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func TestResolveServiceNames(t *testing.T) {
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{
		readyPod("ns", "sbx", "127.0.0.5", nil, true),
		readyPod("ns", "other", "127.0.0.6", map[string]string{"app": "x"}, true),
		readyPod("ns", "starting", "127.0.0.7", nil, false),
	} {
		_ = pods.Add(p)
	}
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sbx"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "by-selector"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "starting"}},
	} {
		_ = svcs.Add(s)
	}
	a := &agent{cfg: config{clusterDomain: "cluster.local"}, pods: corelisters.NewPodLister(pods), svcs: corelisters.NewServiceLister(svcs)}
	tests := []struct {
		name string
		want string // "" = not found
	}{
		{"sbx.ns.svc.cluster.local.", "127.0.0.5"},
		{"SBX.ns.svc.cluster.local", "127.0.0.5"},
		{"by-selector.ns.svc.cluster.local.", "127.0.0.6"},
		{"starting.ns.svc.cluster.local.", ""}, // pod not ready
		{"missing.ns.svc.cluster.local.", ""},
		{"sbx.other.svc.cluster.local.", ""},
		{"sbx.ns.svc.example.org.", ""},
		{"a.sbx.ns.svc.cluster.local.", ""},
	}
	for _, tt := range tests {
		ips, ok := a.resolve(tt.name)
		got := ""
		if ok && len(ips) == 1 {
			got = ips[0].String()
		}
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("resolve(%q) = %v %v, want %q", tt.name, ips, ok, tt.want)
		}
	}
}

// The server answers over UDP and TCP, as Go's resolver uses both.
func TestDNSServerUDPAndTCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := startDNS(ctx, "127.0.0.1:0", func(name string) ([]net.IP, bool) {
		return []net.IP{net.IPv4(127, 0, 0, 3)}, name == "x.ns.svc.cluster.local."
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for _, network := range []string{"udp", "tcp"} {
		addr := s.udp.LocalAddr().String()
		if network == "tcp" {
			addr = s.tcp.Addr().String()
		}
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
		ips, err := r.LookupHost(ctx, "x.ns.svc.cluster.local")
		if err != nil || len(ips) != 1 || ips[0] != "127.0.0.3" {
			t.Errorf("%s: %v %v", network, ips, err)
		}
		var dnsErr *net.DNSError
		if _, err := r.LookupHost(ctx, "y.ns.svc.cluster.local"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Errorf("%s: unknown name gave %v", network, err)
		}
	}
}
