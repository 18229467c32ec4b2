package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/amalgam-store/amalgam/check"
	"github.com/spf13/cobra"
)

// setMutant injects the named mutant for mc run or mc replay; undo
// removes it.
func setMutant(name string) (undo func(), err error) {
	if name == "" {
		return func() {}, nil
	}
	if _, err := check.LookupMutant(name); err != nil {
		return nil, err
	}
	if !check.MutantsBuilt {
		return nil, errors.New("--mutant needs a binary built with -tags mutants (go build -tags mutants ./cmd/amalgam-cli)")
	}
	return func() { _ = check.SetMutant("") }, check.SetMutant(name)
}

// listMutants writes mc list --mutants: each mutant with the search that
// finds it.
func listMutants(cmd *cobra.Command, gl *globalFlags) error {
	w := cmd.OutOrStdout()
	if gl.output == "json" {
		return writeJSON(w, check.Mutants())
	}
	if !check.MutantsBuilt {
		fmt.Fprintln(w, "# this binary carries no mutants: build with -tags mutants to run them")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MUTANT\tKIND\tSCENARIO\tSTRATEGY\tSEED\tFOUND BY\tBUG")
	for _, m := range check.Mutants() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.Name, m.Kind, m.Scenario, m.Strategy, m.Seed, m.Finds, m.Bug)
	}
	return tw.Flush()
}
