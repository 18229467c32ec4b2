//go:build !mutants

package reconfig

// Mutant names the bug injected for the model checker's mutation tests
// (see docs/model-checking.md). Outside the mutants build tag it is the
// empty constant, so every mutant branch compiles away.
const Mutant = ""
