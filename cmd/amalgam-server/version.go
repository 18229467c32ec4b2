package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/internal/buildinfo"
)

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and Go version of amalgam-server",
		Example: `  amalgam-server version
  amalgam-server version --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := buildinfo.Read()
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(bi)
			case "text":
				_, err := fmt.Fprintln(w, bi.Line("amalgam-server"))
				return err
			}
			return fmt.Errorf("version: --output must be text or json, got %q", output)
		},
	}
	cmd.Flags().StringVar(&output, "output", "text", "text or json")
	return cmd
}
