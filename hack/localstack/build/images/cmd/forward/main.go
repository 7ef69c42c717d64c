// Command forward relays TCP from listen addresses to targets, as a sidecar of a sandbox pod:
// sandboxd binds 127.0.0.1 only, so the server reaches it through this on the pod IP.
//
//	forward [-drain 10s] LISTEN=TARGET...
//	forward $(POD_IP):8080=127.0.0.1:8080 $(POD_IP):9090=127.0.0.1:9090
//
// On SIGTERM it stops accepting and gives open connections -drain to finish.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/hack/localstack/build/images/internal/forward"
)

func main() {
	fs := flag.NewFlagSet("forward", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: forward [-drain DURATION] LISTEN=TARGET...  (e.g. 10.244.0.5:8080=127.0.0.1:8080)")
		fs.PrintDefaults()
	}
	// sandboxd's own -shutdown-timeout default: in-flight calls get as long through us.
	drain := fs.Duration("drain", 10*time.Second, "how long open connections may finish after SIGTERM")
	_ = fs.Parse(os.Args[1:])
	logger := log.New(os.Stderr, "forward: ", log.LstdFlags)
	rules, err := forward.ParseRules(fs.Args())
	if err != nil {
		logger.Print(err)
		os.Exit(2)
	}
	s := &forward.Server{Rules: rules, Drain: *drain, Logf: logger.Printf}
	lns, err := s.Listen()
	if err != nil {
		logger.Print(err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	s.Serve(ctx, lns)
	logger.Print("stopped")
}
