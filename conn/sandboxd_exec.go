package conn

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"
)

// pidWait bounds how long an abort waits for the daemon's InitEvent (the process id it
// needs to signal) when the timeout hits right after the start.
const pidWait = 2 * time.Second

// Exec runs the command with the streaming Start RPC, copying output chunks to the writers
// as they arrive, so output size never turns into memory.
func (s *sandboxdConn) Exec(ctx context.Context, t Target, req ExecRequest) (ExecResult, error) {
	argv, err := execArgv(req)
	if err != nil {
		return ExecResult{}, err
	}
	// The daemon gives every process a stdin pipe. A shell closes it itself; a program run as
	// argv gets an EOF by WriteStdin as soon as it runs (an RPC more per call, about 8% of the
	// server's CPU for a small command, hence not for shells).
	argv, shellClosesStdin := stdinClosedByShell(req, argv)
	if err := ctx.Err(); err != nil {
		return ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	host, err := s.host(t)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	target := hostPort(host, s.grpcPort)
	client, release, err := s.grpcClient(target)
	if err != nil {
		return ExecResult{}, err
	}
	defer release()

	runCtx, cancelRun := withExecTimeout(ctx, req.Timeout)
	defer cancelRun()
	// The stream deliberately ignores ctx: were it cancelled first, the daemon would kill
	// only the direct child and leave the rest of the process group running. The abort
	// path signals the group, then cancels the stream.
	streamCtx, cancelStream := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStream()
	k := &aborter{ctx: ctx, client: client, cancelStream: cancelStream, started: make(chan struct{})}

	// A callback rather than a watching goroutine: nothing runs per call unless the command
	// times out or the caller gives up. Exec returns only after an abort that began has ended.
	aborted := make(chan struct{})
	stopAbort := context.AfterFunc(runCtx, func() { defer close(aborted); k.abort() })
	defer func() {
		if !stopAbort() {
			<-aborted
		}
	}()

	// The EOF goes alongside the stream, not before the output.
	var closing sync.WaitGroup
	defer closing.Wait()
	closeStdin := func(pid int32) {
		closing.Go(func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
			defer cancel()
			// NOT_FOUND: the process already ended, which is as good.
			_, _ = client.WriteStdin(cctx, &processv1.WriteStdinRequest{ProcessId: pid,
				Payload: &processv1.WriteStdinRequest_Eof{Eof: &emptypb.Empty{}}})
		})
	}

	stream, err := client.Start(streamCtx, &processv1.StartRequest{Config: &processv1.ProcessConfig{Command: argv}})
	if err != nil {
		if k.fired.Load() {
			return ExecResult{}, execError(ctx, runCtx, req.Timeout, err)
		}
		return ExecResult{}, s.rpcError(ctx, target, err)
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			if k.fired.Load() {
				return ExecResult{}, execError(ctx, runCtx, req.Timeout, err)
			}
			if k.pid.Load() == 0 {
				if res, ok := startFailure(req, err); ok {
					return res, nil
				}
			}
			if chunkTooLarge(err) {
				k.abort() // the command is still running and its output cannot be read
			}
			return ExecResult{}, s.rpcError(ctx, target, err)
		}
		switch ev := msg.GetEvent().(type) {
		case *processv1.StartResponse_Init:
			k.setPID(ev.Init.GetProcessId())
			if !shellClosesStdin {
				closeStdin(ev.Init.GetProcessId())
			}
		case *processv1.StartResponse_Stdout:
			if _, err := req.Stdout.Write(ev.Stdout); err != nil {
				k.abort()
				return ExecResult{}, fmt.Errorf("exec: writing stdout: %w", err)
			}
		case *processv1.StartResponse_Stderr:
			if _, err := req.Stderr.Write(ev.Stderr); err != nil {
				k.abort()
				return ExecResult{}, fmt.Errorf("exec: writing stderr: %w", err)
			}
		case *processv1.StartResponse_Exit:
			if k.fired.Load() {
				return ExecResult{}, execError(ctx, runCtx, req.Timeout, fmt.Errorf("exec: aborted"))
			}
			return ExecResult{ExitCode: int(ev.Exit.GetExitCode())}, nil
		}
	}
}

// aborter kills a started process group once, then ends its stream.
type aborter struct {
	ctx          context.Context
	client       processv1.ProcessServiceClient
	cancelStream context.CancelFunc

	once    sync.Once
	fired   atomic.Bool
	pid     atomic.Int32
	started chan struct{}
}

func (k *aborter) setPID(pid int32) {
	if k.pid.CompareAndSwap(0, pid) {
		close(k.started)
	}
}

func (k *aborter) abort() {
	k.once.Do(func() {
		k.fired.Store(true)
		select {
		case <-k.started:
		case <-time.After(pidWait):
		}
		if pid := k.pid.Load(); pid != 0 {
			// A fresh context: the caller's is typically the one that just ended.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(k.ctx), killTimeout)
			// SendSignal reaches the whole process group; NOT_FOUND means it already exited.
			_, _ = k.client.SendSignal(sctx, &processv1.SendSignalRequest{ProcessId: pid, Signal: processv1.Signal_SIGNAL_SIGKILL})
			cancel()
		}
		k.cancelStream()
	})
}

// startFailure reports a program that could not be started the way a shell would (exit
// 127 not found, 126 not executable), with the daemon's message on stderr, so Argv
// requests behave alike on every runtime.
func startFailure(req ExecRequest, err error) (ExecResult, bool) {
	st := status.Convert(err)
	code := 0
	switch st.Code() {
	case codes.NotFound:
		code = 127
	case codes.PermissionDenied:
		code = 126
	default:
		return ExecResult{}, false
	}
	_, _ = fmt.Fprintf(req.Stderr, "%s\n", st.Message())
	return ExecResult{ExitCode: code}, true
}

// chunkTooLarge reports gRPC's own refusal of a message over maxRecvMsg (not a status the
// daemon sent).
func chunkTooLarge(err error) bool {
	st := status.Convert(err)
	return st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "received message larger than max")
}

// rpcError maps a gRPC failure to the conn errors.
func (s *sandboxdConn) rpcError(ctx context.Context, target string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("exec: %w", ctx.Err())
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unavailable:
		s.dropConn(target)
		return fmt.Errorf("exec: %w: sandboxd at %s: %s", ErrUnreachable, target, st.Message())
	case codes.PermissionDenied:
		return fmt.Errorf("exec: %w: %s", ErrDenied, st.Message())
	}
	if chunkTooLarge(err) {
		return fmt.Errorf("exec: sandboxd at %s sends output in chunks larger than this server accepts (%d bytes); "+
			"start sandboxd with --stream-chunk-size %d or less (its default is 4096): %s", target, maxRecvMsg, maxRecvMsg, st.Message())
	}
	return fmt.Errorf("exec: sandboxd %s: %s", st.Code(), st.Message())
}
