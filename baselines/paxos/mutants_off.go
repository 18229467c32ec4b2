//go:build !mutants

package paxos

// Mutant names the bug injected for the model checker's mutation tests.
// Outside the mutants build tag it is the empty constant, so every mutant
// branch compiles away.
const Mutant = ""
