package tools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// inputError is bad input: its text goes to the model as is.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func badInput(format string, a ...any) error { return &inputError{msg: fmt.Sprintf(format, a...)} }

// failure turns an error into an isError result whose text tells the model what to do next.
// op says what was being done ("execute the command"); ref names the sandbox for advice.
func failure(op string, ref claimRef, err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(advice(op, ref, err))
}

// claimRef names what a call was about, for advice: the claim and, for process tools, the process.
type claimRef struct{ Namespace, Name, Process string }

func advice(op string, ref claimRef, err error) string {
	var in *inputError
	var status apierrors.APIStatus
	var api *kube.APIError
	var expand *workspace.ExpandError
	var expired *kube.ExpiredError
	switch {
	case errors.As(err, &in):
		return in.msg
	case processAdvice(op, ref, err) != "":
		return processAdvice(op, ref, err)
	case workspaceAdvice(op, err) != "":
		return workspaceAdvice(op, err)
	case suspendAdvice(op, ref, err) != "":
		return suspendAdvice(op, ref, err)
	case errors.Is(err, kube.ErrInvalid):
		return fmt.Sprintf("Could not %s: %v. Fix that argument and retry.", op, err)
	case errors.As(err, &expired):
		return fmt.Sprintf("Could not %s: %v. Call create_sandbox for a new one. A sandbox in use is renewed; extend_sandbox "+
			"keeps one through a long pause.", op, expired)
	case errors.Is(err, kube.ErrNotFound):
		return fmt.Sprintf("Sandbox claim %q is not found in namespace %q. It may have been deleted or expired (shutdown_after_seconds); "+
			"list_sandboxes lists your sandboxes; create_sandbox makes a new one.", ref.Name, ref.Namespace)
	case errors.As(err, &api):
		// Before the claim and sandbox cases: when the API server is down or refuses us,
		// that is the news, and whether retrying helps.
		return fmt.Sprintf("Could not %s: %s. %s.", op, api.Error(), api.Advice())
	case errors.Is(err, kube.ErrClaimFailed):
		return fmt.Sprintf("Could not %s: %v. The claim was deleted; fix the arguments (warm pool name, pod labels and annotations, env) and retry.", op, err)
	case errors.Is(err, kube.ErrTimeout):
		return fmt.Sprintf("Could not %s: %v. The claim was deleted; retry with a larger sandbox_ready_timeout, or check that the warm pool has ready sandboxes.", op, err)
	case errors.As(err, &status) && apierrors.IsForbidden(err):
		return fmt.Sprintf("Could not %s: the server's Kubernetes identity is not allowed to do this in namespace %q (%s). "+
			"Use a namespace the server may use, or ask the operator to grant access.", op, ref.Namespace, status.Status().Message)
	case errors.Is(err, conn.ErrTimeout):
		return fmt.Sprintf("Could not %s: it did not finish within the timeout and was killed. Retry with a larger timeout (at most %d s), or run it in the background (e.g. `nohup cmd > out.log 2>&1 &`) and poll.", op, maxTimeout)
	case errors.Is(err, conn.ErrNotFound):
		return fmt.Sprintf("Could not %s: %v. Check the path with list_files or file_exists.", op, err)
	case errors.Is(err, conn.ErrNotDir):
		return fmt.Sprintf("Could not %s: %v. list_files needs a directory; use file_exists or download_file for files.", op, err)
	case errors.Is(err, conn.ErrIsDir):
		return fmt.Sprintf("Could not %s: %v. Use list_files for directories.", op, err)
	case errors.Is(err, conn.ErrDenied):
		return fmt.Sprintf("Could not %s: %v. Paths must stay inside the sandbox's working directory.", op, err)
	case errors.Is(err, workspace.ErrBadArchive):
		return fmt.Sprintf("Could not %s: %v. Nothing of it was unpacked: re-create it (tar czf - -C DIR . | base64) and upload it again, whole.", op, err)
	case errors.Is(err, workspace.ErrEmptyArchive):
		return fmt.Sprintf("Could not %s: %v, so nothing was unpacked. Check the directory packed is the one meant and not empty "+
			"(tar czf - -C DIR . | base64).", op, err)
	case errors.Is(err, workspace.ErrUnsafeEntry):
		return fmt.Sprintf("Could not %s: %v, so nothing of it was unpacked. Pack from inside the directory (tar czf - -C DIR .) "+
			"so that every name is relative to it, without .. or links to follow.", op, err)
	case errors.As(err, &expand):
		return fmt.Sprintf("Could not %s: it expands to more than %d bytes, this server's bound (K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES), "+
			"so nothing of it was unpacked. Split the tree into several archives, or leave out build outputs.", op, expand.Limit)
	case errors.Is(err, workspace.ErrDirInTheWay):
		return fmt.Sprintf("Could not %s: %v, so nothing of it was unpacked. Remove that directory (remove_path) or rename the "+
			"file in the archive.", op, err)
	case errors.Is(err, conn.ErrTooLarge):
		return fmt.Sprintf("Could not %s: %v. Read a part of it with execute_command (e.g. `head -c 100000 FILE`, or `split`).", op, err)
	case errors.Is(err, conn.ErrNoAddress):
		return fmt.Sprintf("Could not %s: %v. Check get_sandbox_status; if the sandbox is not ready, wait or recreate it.", op, err)
	case errors.Is(err, conn.ErrUnreachable):
		return fmt.Sprintf("Could not %s in sandbox %q: %v. The sandbox may be restarting; check get_sandbox_status and retry.", op, ref.Name, err)
	case errors.Is(err, errSandboxStopped):
		return fmt.Sprintf("Could not %s in sandbox %q: %v. Check get_sandbox_status: once it is ready again (its files outside a persistent volume are gone), "+
			"run the command again; if it stays not ready, delete it and create a new one.", op, ref.Name, err)
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("Could not %s: the request was cancelled.", op)
	case errors.As(err, &status):
		return fmt.Sprintf("Could not %s: Kubernetes API error: %s", op, status.Status().Message)
	case isConnError(err):
		// The API server's failures are APIErrors above: this is the way to the sandbox.
		return fmt.Sprintf("Could not %s: sandbox %q is unreachable (%v). Check get_sandbox_status and retry in a few seconds.", op, ref.Name, err)
	}
	return fmt.Sprintf("Could not %s: %v", op, err)
}

func isConnError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || strings.Contains(err.Error(), "connection refused")
}
