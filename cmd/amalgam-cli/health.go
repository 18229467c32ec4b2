package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
)

type healthJSON struct {
	Healthy  bool     `json:"healthy"`
	Problems []string `json:"problems"`
}

func newHealthCmd(gl *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Exit 0 if the cluster is healthy, 2 if not (1 on errors)",
		Long: `health checks the cluster once: every machine answers, every server is in the
newest configuration at its current incarnation, and nothing is rebuilding.
It prints "healthy", or "not healthy:" and what is degraded, and exits 0 when
healthy, 2 when not, 1 when the cluster cannot be reached. For scripts and
probes; status shows the details.

Examples:
  amalgam-cli health && echo ok
  amalgam-cli health --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCluster(cmd, gl, func(ctx context.Context, c *client.Client) error {
				doc, err := fetchStatus(ctx, c, gl.cluster)
				if err != nil {
					return err
				}
				return reportHealth(cmd, gl, doc)
			})
		},
	}
}

func reportHealth(cmd *cobra.Command, gl *globalFlags, doc *statusDoc) error {
	w := cmd.OutOrStdout()
	if gl.output == "json" {
		if err := writeJSON(w, healthJSON{Healthy: doc.Healthy, Problems: append([]string{}, doc.Problems...)}); err != nil {
			return err
		}
	} else if doc.Healthy {
		fmt.Fprintln(w, "healthy")
	} else {
		fmt.Fprintf(w, "not healthy: %s\n", strings.Join(doc.Problems, "; "))
	}
	if !doc.Healthy {
		return unhealthy(doc.Problems)
	}
	return nil
}
