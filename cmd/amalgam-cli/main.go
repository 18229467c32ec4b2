// Command amalgam-cli talks to an Amalgam cluster and inspects layouts.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "amalgam-cli: %v\n", oneLine(err))
		os.Exit(1)
	}
}
