package forward

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseRules(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    []Rule
		wantErr string
	}{
		{args: []string{"10.0.0.5:8080=127.0.0.1:8080", ":9090=127.0.0.1:9090"},
			want: []Rule{{"10.0.0.5:8080", "127.0.0.1:8080"}, {":9090", "127.0.0.1:9090"}}},
		{args: nil, wantErr: "no rule: give LISTEN=TARGET, e.g. $(POD_IP):8080=127.0.0.1:8080"},
		{args: []string{"10.0.0.5:8080"}, wantErr: `rule "10.0.0.5:8080": want LISTEN=TARGET with host:port on both sides, e.g. 10.244.0.5:8080=127.0.0.1:8080`},
		{args: []string{"10.0.0.5=127.0.0.1:8080"}, wantErr: `rule "10.0.0.5=127.0.0.1:8080": want LISTEN=TARGET`},
		{args: []string{"10.0.0.5:8080=127.0.0.1:"}, wantErr: `rule "10.0.0.5:8080=127.0.0.1:": want LISTEN=TARGET`},
		// An unexpanded $(POD_IP) reaches us verbatim when the env var is missing.
		{args: []string{"$(POD_IP):8080=127.0.0.1:8080"}, want: []Rule{{"$(POD_IP):8080", "127.0.0.1:8080"}}},
	} {
		got, err := ParseRules(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("ParseRules(%q) error = %v, want prefix %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("ParseRules(%q) = %v, %v; want %v", tc.args, got, err, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseRules(%q)[%d] = %v, want %v", tc.args, i, got[i], tc.want[i])
			}
		}
	}
}

// upperAfterEOF answers each connection with the upper-cased bytes it read, once the client
// has half-closed: it only works through a relay that passes the half-close on.
func upperAfterEOF(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				c.Write([]byte(strings.ToUpper(string(b))))
			}()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T, rules []Rule, drain time.Duration) ([]net.Listener, context.CancelFunc, chan struct{}) {
	t.Helper()
	s := &Server{Rules: rules, Drain: drain, Logf: t.Logf}
	lns, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, lns); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return lns, cancel, done
}

func TestRelayPassesHalfClose(t *testing.T) {
	a, b := upperAfterEOF(t), upperAfterEOF(t)
	lns, _, _ := start(t, []Rule{{"127.0.0.1:0", a}, {"127.0.0.1:0", b}}, time.Second)
	for i, ln := range lns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		msg := strings.Repeat("sandboxd ", 100000) // larger than any socket buffer
		go func() { c.Write([]byte(msg)); c.(*net.TCPConn).CloseWrite() }()
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != strings.ToUpper(msg) {
			t.Errorf("rule %d: read %d bytes, %v; want %d upper-cased bytes", i, len(got), err, len(msg))
		}
	}
}

func TestUnreachableTargetClosesConnection(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := dead.Addr().String()
	dead.Close()
	lns, _, _ := start(t, []Rule{{"127.0.0.1:0", target}}, time.Second)
	c, err := net.Dial("tcp", lns[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read = %d, %v; want EOF", n, err)
	}
}

func TestDrainEndsOpenConnections(t *testing.T) {
	// A target that never answers nor closes: only the drain ends the connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	lns, cancel, done := start(t, []Rule{{"127.0.0.1:0", ln.Addr().String()}}, 200*time.Millisecond)
	c, err := net.Dial("tcp", lns[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x")) // makes sure the relay has connected before the cancel
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	if d := time.Since(t0); d < 200*time.Millisecond {
		t.Errorf("Serve returned after %v, before the 200ms drain", d)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("connection still open after the drain")
	}
	if _, err := net.Dial("tcp", lns[0].Addr().String()); err == nil {
		t.Error("still accepting after Serve returned")
	}
}

func TestListenAllOrNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	s := &Server{Rules: []Rule{{freeAddr, "127.0.0.1:1"}, {busy.Addr().String(), "127.0.0.1:1"}}, Logf: t.Logf}
	if _, err := s.Listen(); err == nil || !strings.HasPrefix(err.Error(), "listen "+busy.Addr().String()+": ") {
		t.Fatalf("Listen error = %v, want one naming %s", err, busy.Addr())
	}
	// The first rule's listener was closed again: its port is free.
	ln, err := net.Listen("tcp", freeAddr)
	if err != nil {
		t.Fatalf("first listener left open: %v", err)
	}
	ln.Close()
}
