package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/internal/buildinfo"
)

func newVersionCmd(gl *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and Go version of amalgam-cli",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := buildinfo.Read()
			if gl.output == "json" {
				return writeJSON(cmd.OutOrStdout(), bi)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), bi.Line("amalgam-cli"))
			return err
		},
	}
}
