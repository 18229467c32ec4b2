// Command amalgam-bench benchmarks Amalgam against ShardedPaxos and RSPaxos
// on this machine. amalgam-cli bench runs it, so that the CLI does not link
// the benchmark harness.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		line := strings.Join(strings.Fields(err.Error()), " ")
		fmt.Fprintf(os.Stderr, "amalgam-bench: %s\n", line)
		if f := root.Flags().Lookup("output"); f != nil && f.Value.String() == "json" {
			_ = writeJSON(os.Stdout, struct {
				Error string `json:"error"`
			}{line})
		}
		os.Exit(1)
	}
}

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
