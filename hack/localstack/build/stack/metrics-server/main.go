// Command metrics-server is upstream's metrics-server (sigs.k8s.io/metrics-server/cmd/metrics-server)
// built on the stack's Kubernetes libraries, so that a cold build compiles only its own
// packages rather than a second client-go and apiserver (4 to 5 minutes on 2 cores). One
// thing differs: the OpenAPI definitions. Its generated ones name types by Go import path
// (k8s.io/metrics/pkg/apis/metrics/v1beta1.NodeMetrics), while the v1.37 libraries look types
// up by their OpenAPIModelName (io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics) and
// panic at start on a name they cannot find; Kubernetes' own generated definitions, which the
// kube-apiserver serves, cover the same metrics.k8s.io types under the new names. Flags,
// options, validation and serving are upstream's (cmd/metrics-server/app).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/pkg/version"
	"k8s.io/component-base/logs"
	k8sopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	"sigs.k8s.io/metrics-server/cmd/metrics-server/app/options"
	"sigs.k8s.io/metrics-server/pkg/api"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()
	if err := run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "metrics-server:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet(args[0], pflag.ContinueOnError)
	for _, set := range opts.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if opts.ShowVersion {
		fmt.Println(version.Get().GitVersion)
		return nil
	}
	if errs := opts.Validate(); len(errs) > 0 {
		return errs[0]
	}
	cfg, err := opts.ServerConfig()
	if err != nil {
		return err
	}
	// As upstream's options build them (DefaultOpenAPI*Config also computes Definitions,
	// which take precedence over GetDefinitions), with Kubernetes' definitions and upstream's
	// titles and version.
	namer := openapinamer.NewDefinitionNamer(api.Scheme)
	v2 := genericapiserver.DefaultOpenAPIConfig(k8sopenapi.GetOpenAPIDefinitions, namer)
	v2.Info = cfg.Apiserver.OpenAPIConfig.Info
	v3 := genericapiserver.DefaultOpenAPIV3Config(k8sopenapi.GetOpenAPIDefinitions, namer)
	v3.Info = cfg.Apiserver.OpenAPIV3Config.Info
	cfg.Apiserver.OpenAPIConfig, cfg.Apiserver.OpenAPIV3Config = v2, v3
	server, err := cfg.Complete()
	if err != nil {
		return err
	}
	return server.RunUntil(genericapiserver.SetupSignalHandler())
}
