package buildinfo

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// Command is the version command of the program name. With output nil it
// has its own --output flag, text or json; otherwise *output, read when
// the command runs, chooses: json, or else text.
func Command(name string, output *string) *cobra.Command {
	own := output == nil
	if own {
		output = new(string)
	}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and Go version of " + name,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			switch {
			case *output == "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(Read())
			case own && *output != "text":
				return fmt.Errorf("version: --output must be text or json, got %q", *output)
			}
			_, err := fmt.Fprintln(w, Read().Line(name))
			return err
		},
	}
	if own {
		cmd.Example = "  " + name + " version\n  " + name + " version --output json"
		cmd.Flags().StringVar(output, "output", "text", "text or json")
	}
	return cmd
}
