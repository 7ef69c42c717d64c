// Command coredns is CoreDNS with only the plugins the local stack's Corefile
// (hack/localstack/manifests/addons/coredns.yaml) uses. Upstream's main links every plugin,
// and with them the route53, azure and clouddns cloud SDKs, the tracer's and QUIC's: most of
// its compile time. A main that imports coremain and the plugins it wants is CoreDNS's own way
// of choosing plugins at compile time; the directive order stays upstream's
// (dnsserver.Directives).
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/template"
)

func main() {
	coremain.Run()
}
