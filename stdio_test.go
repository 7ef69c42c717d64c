package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"
)

// stdioServer is run() serving stdio over pipes, for tests that speak JSON-RPC to it.
type stdioServer struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  *bufio.Scanner
	stderr *syncBuffer
	done   chan int
}

func startStdio(t *testing.T, args []string, env ...string) *stdioServer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s := &stdioServer{t: t, in: inW, lines: bufio.NewScanner(outR), stderr: &syncBuffer{}, done: make(chan int, 1)}
	s.lines.Buffer(make([]byte, 1<<20), 1<<20)
	go func() {
		s.done <- run(ctx, args, env, inR, outW, s.stderr)
		outW.Close()
	}()
	return s
}

func (s *stdioServer) send(msg string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, msg+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// next reads one stdout line, which must be a JSON-RPC message.
func (s *stdioServer) next() map[string]any {
	s.t.Helper()
	if !s.lines.Scan() {
		s.t.Fatalf("stdout closed: %v; stderr: %s", s.lines.Err(), s.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(s.lines.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
		s.t.Fatalf("stdout line is not JSON-RPC: %q", s.lines.Text())
	}
	return m
}

// initialize runs the handshake.
func (s *stdioServer) initialize() {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if r := s.next(); r["id"] != float64(1) {
		s.t.Fatalf("initialize answer %v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// close ends stdin and returns the exit code.
func (s *stdioServer) close() int {
	s.in.Close()
	return <-s.done
}

// syncBuffer is the server's stderr, read by the test while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
