// Command crds prints the agent-sandbox CRDs of a directory patched for a cluster without the
// controller's conversion webhook (stack.sh runs the controller with --enable-webhook=false):
// only v1beta1 is served and stored, conversion strategy None.
//
//	crds <dir with agent-sandbox CRD YAMLs> | kubectl apply -f -
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crds <dir with agent-sandbox CRD YAMLs>")
		os.Exit(2)
	}
	if err := writePatchedCRDs(os.Stdout, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crds:", err)
		os.Exit(1)
	}
}
