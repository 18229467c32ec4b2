package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/check"
)

// mutantFlag is --mutant of dev, node and reconfig (a common flag): a bug
// of check's mutant table injected into this process's protocol code, so
// that an online checker has a live bug to predict.
type mutantFlag struct {
	name string
	bug  string // the table's description, once set
}

func (m *mutantFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&m.name, "mutant", "", "run with this injected protocol bug, for testing the checker (binaries built with -tags mutants only; amalgam-cli mc list --mutants names them)")
}

// set validates --mutant and injects it; call it before anything starts.
func (m *mutantFlag) set() error {
	if m.name == "" {
		return nil
	}
	if !check.MutantsBuilt {
		return errors.New("--mutant needs a binary built with -tags mutants (go build -tags mutants ./cmd/amalgam-server)")
	}
	mu, err := check.LookupMutant(m.name)
	if err != nil || mu.Kind == "persistence" {
		return fmt.Errorf("--mutant %q is not one the server runs (persistence mutants exist in the checker's restarts only); valid: %s",
			m.name, strings.Join(serverMutants(), ", "))
	}
	m.bug = mu.Bug
	return check.SetMutant(m.name)
}

// serverMutants are the mutants the server can run: those in protocol
// code (the persistence ones change what the checker's restarted servers
// read back, which a live server does not do).
func serverMutants() []string {
	var names []string
	for _, mu := range check.Mutants() {
		if mu.Kind != "persistence" {
			names = append(names, mu.Name)
		}
	}
	return names
}

// announce says loudly that this process runs a bug, on out and in the log.
func (m *mutantFlag) announce(out io.Writer, log *slog.Logger) {
	if m.name == "" {
		return
	}
	fmt.Fprintf(out, "MUTANT %s: this server runs an injected bug: %s\n", m.name, m.bug)
	log.Warn("running a mutant: an injected protocol bug, for testing the checker", "mutant", m.name, "bug", m.bug)
}
