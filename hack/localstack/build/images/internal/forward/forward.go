// Package forward relays TCP connections from listen addresses to target addresses. In a
// sandbox pod it makes sandboxd, which binds 127.0.0.1 only, reachable on the pod IP.
package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// DialTimeout bounds connecting to a target: the target runs in the same pod, so a slow
// connect means it is not up yet and the client should see a closed connection, not a hang.
const DialTimeout = 5 * time.Second

// Rule relays connections accepted on Listen to Target.
type Rule struct{ Listen, Target string }

// ParseRules parses "LISTEN=TARGET" arguments, each side host:port, e.g.
// "10.244.0.5:8080=127.0.0.1:8080".
func ParseRules(args []string) ([]Rule, error) {
	if len(args) == 0 {
		return nil, errors.New("no rule: give LISTEN=TARGET, e.g. $(POD_IP):8080=127.0.0.1:8080")
	}
	rules := make([]Rule, 0, len(args))
	for _, a := range args {
		l, t, ok := strings.Cut(a, "=")
		if !ok || !hostPort(l) || !hostPort(t) {
			return nil, fmt.Errorf("rule %q: want LISTEN=TARGET with host:port on both sides, e.g. 10.244.0.5:8080=127.0.0.1:8080", a)
		}
		rules = append(rules, Rule{l, t})
	}
	return rules, nil
}

func hostPort(s string) bool {
	_, port, err := net.SplitHostPort(s)
	return err == nil && port != ""
}

// Server relays the connections of its rules.
type Server struct {
	Rules []Rule
	// Drain is how long open connections may go on once ctx is done; then they are closed.
	Drain time.Duration
	// Logf reports listeners and failed dials.
	Logf func(format string, args ...any)

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Listen opens every rule's listener, or none: a forwarder missing one port is worse than
// one that fails to start.
func (s *Server) Listen() ([]net.Listener, error) {
	var lns []net.Listener
	for _, r := range s.Rules {
		ln, err := net.Listen("tcp", r.Listen)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("listen %s: %w", r.Listen, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// Serve relays connections on lns (one per rule, as Listen returns them) until ctx is done,
// then stops accepting and lets open connections finish for up to Drain.
func (s *Server) Serve(ctx context.Context, lns []net.Listener) {
	s.conns = map[net.Conn]struct{}{}
	var accepting sync.WaitGroup
	for i, ln := range lns {
		s.Logf("forwarding %s to %s", ln.Addr(), s.Rules[i].Target)
		accepting.Add(1)
		go func() { defer accepting.Done(); s.accept(ctx, ln, s.Rules[i].Target) }()
	}
	<-ctx.Done()
	for _, ln := range lns {
		ln.Close()
	}
	accepting.Wait()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.Drain):
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done
	}
}

func (s *Server) accept(ctx context.Context, ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				s.Logf("accept on %s: %v", ln.Addr(), err)
				time.Sleep(100 * time.Millisecond) // e.g. out of file descriptors: do not spin
				continue
			}
			return
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.relay(c, target) }()
	}
}

// relay copies both ways; each direction's end is passed on as a half-close, so protocols
// that read to EOF before answering keep working.
func (s *Server) relay(c net.Conn, target string) {
	s.track(c, true)
	defer s.track(c, false)
	defer c.Close()
	t, err := net.DialTimeout("tcp", target, DialTimeout)
	if err != nil {
		s.Logf("connection from %s: %v", c.RemoteAddr(), err)
		return
	}
	s.track(t, true)
	defer s.track(t, false)
	defer t.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(t, c) }()
	go func() { defer wg.Done(); pipe(c, t) }()
	wg.Wait()
}

func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		cw.CloseWrite()
		return
	}
	// The source failed (reset, or closed by the drain): end both sides at once.
	dst.Close()
	src.Close()
}

func (s *Server) track(c net.Conn, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
}
