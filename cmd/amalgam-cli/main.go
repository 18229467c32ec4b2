// Command amalgam-cli talks to an Amalgam cluster and inspects layouts.
package main

import (
	"os"
)

func main() {
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		reportError(root, err)
		os.Exit(exitCode(err))
	}
}
