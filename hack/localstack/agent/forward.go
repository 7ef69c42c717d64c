package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// forwarder accepts TCP connections on a pod address and pipes each to a local target:
// sandboxd v0.5.6 listens on 127.0.0.1 only, while clients reach it at podIP:8080/9090.
type forwarder struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startForwarder(ctx context.Context, listen, target string) (*forwarder, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("forward %s: %w", listen, err)
	}
	f := &forwarder{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.pipe(c)
	}
}

func (f *forwarder) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		if f.conns == nil {
			return false // closed
		}
		f.conns[c] = struct{}{}
	} else if f.conns != nil {
		delete(f.conns, c)
	}
	return true
}

func (f *forwarder) pipe(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		return // the client sees a reset, as with a closed port
	}
	defer up.Close()
	if !f.track(c, true) || !f.track(up, true) {
		return
	}
	defer f.track(c, false)
	defer f.track(up, false)
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

// close stops accepting, cuts every open connection and waits for the goroutines.
func (f *forwarder) close() error {
	err := f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
