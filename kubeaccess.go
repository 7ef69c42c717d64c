package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/logging"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// kubeAccess is how the server reaches the Kubernetes API, from kubectl's flags and files.
type kubeAccess struct {
	rest      *rest.Config
	user      string // the kubeconfig user of the context in use ("" in a pod), for messages
	namespace string // where calls without a namespace go
}

// loadKubeAccess reads the Kubernetes configuration the way kubectl does, but refuses one that
// leads nowhere: with no kubeconfig (or a context that names no cluster) and no in-cluster
// environment, client-go silently falls back to http://localhost:8080, and every tool call
// would fail as "connection refused" while the thing to fix is the setup.
func loadKubeAccess(f flags, environ []string) (kubeAccess, error) {
	loader := f.kube.ToRawKubeConfigLoader()
	restCfg, err := loader.ClientConfig()
	if err != nil {
		return kubeAccess{}, fmt.Errorf("the Kubernetes configuration is unusable: %w (check the kubeconfig and the --kubeconfig and --context flags)", err)
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return kubeAccess{}, fmt.Errorf("the Kubernetes configuration is unusable: %w (check the kubeconfig and the --kubeconfig and --context flags)", err)
	}
	if fallback, _ := clientcmd.DefaultClientConfig.ClientConfig(); reflect.DeepEqual(restCfg, fallback) && !explicitServer(f, environ) {
		return kubeAccess{}, noAPIServer(raw, flagValue(f.kube.Context), loader.ConfigAccess().GetLoadingPrecedence())
	}
	ka := kubeAccess{rest: restCfg, user: flagValue(f.kube.AuthInfoName), namespace: "default"}
	if ka.user == "" {
		ctxName := flagValue(f.kube.Context)
		if ctxName == "" {
			ctxName = raw.CurrentContext
		}
		if c, ok := raw.Contexts[ctxName]; ok {
			ka.user = c.AuthInfo
		}
	}
	if ns, _, err := loader.Namespace(); err == nil && ns != "" {
		ka.namespace = ns
	}
	return ka, nil
}

// explicitServer: an API server named on the command line or by the legacy variable is
// meant, even when it is client-go's fallback address.
func explicitServer(f flags, environ []string) bool {
	return flagValue(f.kube.APIServer) != "" || slices.ContainsFunc(environ, func(kv string) bool {
		return strings.HasPrefix(kv, "KUBERNETES_MASTER=") && kv != "KUBERNETES_MASTER="
	})
}

// noAPIServer says, in one line, why no API server was found and what to set.
func noAPIServer(raw clientcmdapi.Config, contextFlag string, paths []string) error {
	var present []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	files := strings.Join(present, ", ")
	contexts := strings.Join(slices.Sorted(maps.Keys(raw.Contexts)), ", ")
	name := contextFlag
	if name == "" {
		name = raw.CurrentContext
	}
	switch {
	case len(present) == 0:
		return fmt.Errorf("no Kubernetes configuration: pass --kubeconfig PATH or set KUBECONFIG (there is no kubeconfig at %s, and this is not a pod)",
			strings.Join(paths, ", "))
	case len(raw.Contexts) == 0:
		return fmt.Errorf("the kubeconfig %s defines no context: add one, or pass --kubeconfig PATH", files)
	case name == "":
		return fmt.Errorf("the kubeconfig %s selects no context: set current-context in it or pass --context NAME (one of %s)", files, contexts)
	case raw.Contexts[name] == nil: // client-go reports this one itself; kept for safety
		return fmt.Errorf("there is no context %q in the kubeconfig %s: pass --context NAME (one of %s)", name, files, contexts)
	}
	cluster := raw.Contexts[name].Cluster
	return fmt.Errorf("context %q of the kubeconfig %s names cluster %q, which has no server URL there: fix the kubeconfig or pass --context NAME",
		name, files, cluster)
}

func flagValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// startCheckTimeout bounds the first API call at start; a server that does not answer by
// then is reported, and the server starts anyway.
const startCheckTimeout = 5 * time.Second

// checkAPI makes one API call at start, so that a broken setup is on stderr, once, with the
// facts to fix it before the first tool call fails with the same facts. The server starts
// anyway: the API server may come up later.
func checkAPI(ctx context.Context, claims *kube.Client, log zerolog.Logger, namespace string) {
	ctx, cancel := context.WithTimeout(ctx, startCheckTimeout)
	defer cancel()
	err := claims.Probe(ctx, namespace)
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	if api, ok := kube.DescribeAPIError(err); ok {
		logging.ForClients(log.Warn()).Str("api_server", api.URL).Str("user", api.User).Str("cause", string(api.Cause)).
			Bool("retry_may_help", api.Retryable()).Msgf("Kubernetes API check at start failed: %s. %s.", api.Error(), api.Advice())
		return
	}
	logging.ForClients(log.Warn()).Err(err).Msg("Kubernetes API check at start failed: tool calls will fail the same way until this is fixed")
}

// logNotices logs what happens to claims outside any call, for their owners' MCP clients too.
func logNotices(log zerolog.Logger) func(kube.Notice) {
	return func(n kube.Notice) {
		ev := logging.ForClients(log.Warn()).Str(logging.OwnerField, n.Owner).Str("namespace", n.Namespace).
			Str("claim", n.Name).Str("shutdown_time", n.At.UTC().Format(time.RFC3339))
		switch n.Kind {
		case kube.RenewalFailed:
			ev.Err(n.Err).Msg("renewing the sandbox's shutdown time after a call failed: it is deleted then unless a later call renews it or extend_sandbox moves it")
		case kube.Expired:
			ev.Msg("the sandbox reached its shutdown time and was deleted with its files")
		}
	}
}
