package conn_test

import (
	"context"
	"net"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// TestDNSServerByName: K8S_SANDBOX_DNS_SERVER may name its host; the system resolver finds
// that host, and the sandbox name still goes to the configured server.
func TestDNSServerByName(t *testing.T) {
	if addrs, err := net.DefaultResolver.LookupHost(context.Background(), "localhost"); err != nil || len(addrs) != 1 || addrs[0] != "127.0.0.1" {
		t.Skipf("localhost resolves to %v (%v) here; the fake DNS server listens on 127.0.0.1 only", addrs, err)
	}
	srv := httptest.NewServer(newFakeRuntime(t).handler())
	t.Cleanup(srv.Close)
	const name = "pool-x7k2p.team-a.svc.cluster.test."
	dns := startFakeDNS(t, map[string]string{name: "127.0.0.1"})
	_, port, _ := net.SplitHostPort(dns.addr)
	c := mustNew(t, conn.Config{Type: conn.TypeInCluster, ServerPort: srv.Listener.Addr().(*net.TCPAddr).Port,
		ClusterDomain: "cluster.test", DNSServer: net.JoinHostPort("localhost", port)}, nil)
	tg := conn.Target{Namespace: "team-a", SandboxName: "pool-x7k2p"}
	if _, err := c.Exists(t.Context(), tg, "x.txt"); err != nil {
		t.Fatalf("Exists through a DNS server named localhost:%s: %v", port, err)
	}
	if dns.asked(name) == 0 {
		t.Fatal("the configured DNS server was not asked for the sandbox name")
	}
}

// fakeDNS answers A queries for the names it knows (NXDOMAIN otherwise) over UDP, and
// counts what it was asked, so a test can tell that resolution went through it.
type fakeDNS struct {
	addr    string
	records map[string]netip.Addr // fully qualified, lower case, trailing dot

	mu      sync.Mutex
	queries map[string]int
}

func startFakeDNS(t *testing.T, records map[string]string) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{addr: pc.LocalAddr().String(), records: map[string]netip.Addr{}, queries: map[string]int{}}
	for name, ip := range records {
		d.records[strings.ToLower(name)] = netip.MustParseAddr(ip)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, ok := d.answer(buf[:n]); ok {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { _ = pc.Close(); <-done })
	return d
}

func (d *fakeDNS) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(q.Name.String())
	d.mu.Lock()
	d.queries[name]++
	d.mu.Unlock()

	ip, known := d.records[name]
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true,
		RecursionDesired: hdr.RecursionDesired, RCode: rcode})
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if known && q.Type == dnsmessage.TypeA && ip.Is4() {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5}
		if b.AResource(rh, dnsmessage.AResource{A: ip.As4()}) != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

func (d *fakeDNS) asked(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queries[strings.ToLower(name)]
}
