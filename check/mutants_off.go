//go:build !mutants

package check

import "errors"

// MutantsBuilt reports whether this binary carries the mutants.
const MutantsBuilt = false

// SetMutant injects the named mutant; without the mutants build tag there
// are none.
func SetMutant(name string) error {
	if name == "" {
		return nil
	}
	return errors.New("mutants exist only in binaries built with -tags mutants")
}
