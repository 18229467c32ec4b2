// Command amalgam-server runs Amalgam: a whole local cluster (dev), one
// machine (node) or one reconfiguration replica (reconfig).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "amalgam-server: %v\n", err)
		os.Exit(1)
	}
}
