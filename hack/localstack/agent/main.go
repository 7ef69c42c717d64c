// Command localstack-agent is the kubelet stand-in of the local agent-sandbox stack
// (hack/localstack/stack.sh). It binds every unscheduled pod to one Node, gives each pod a
// loopback IP 127.0.0.N and runs the real in-sandbox daemons for it as host processes under a
// per-pod unprivileged uid. It also serves the cluster DNS names of sandbox Services.
//
// Subcommands:
//
//	run   the node agent (see flags)
//	crds  print the agent-sandbox CRDs of a directory patched for a webhook-less cluster
//	reap  SIGKILL every process running under a sandbox uid (used by stack.sh down)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localstack-agent:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: localstack-agent run|crds|reap [flags]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "run":
		cfg, err := parseConfig(args[1:])
		if err != nil {
			return err
		}
		return runAgent(ctx, cfg)
	case "crds":
		fs := flag.NewFlagSet("crds", flag.ContinueOnError)
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("usage: localstack-agent crds <dir with agent-sandbox CRD YAMLs>")
		}
		return writePatchedCRDs(os.Stdout, fs.Arg(0))
	case "reap":
		fs := flag.NewFlagSet("reap", flag.ContinueOnError)
		base := fs.Int("uid-base", defaultUIDBase, "sandbox uids are uid-base+N for pod IP 127.0.0.N")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		r := uidRange{first: *base + firstIP, last: *base + lastIP}
		n, err := reapUIDs(ctx, r)
		fmt.Fprintf(os.Stderr, "localstack-agent: reaped %d sandbox processes\n", n)
		return err
	default:
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
}
