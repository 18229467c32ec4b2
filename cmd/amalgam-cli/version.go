package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd(gl *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of amalgam-cli",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			version := "(unknown)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				version = bi.Main.Version
			}
			w := cmd.OutOrStdout()
			if gl.output == "json" {
				return writeJSON(w, struct {
					Version string `json:"version"`
					Go      string `json:"go"`
				}{version, runtime.Version()})
			}
			_, err := fmt.Fprintf(w, "amalgam-cli %s (%s)\n", version, runtime.Version())
			return err
		},
	}
}
