//go:build mutants

package paxos

// Mutant names the bug injected for the model checker's mutation tests;
// only the mutants build tag (tests) has it settable. Empty: no bug.
var Mutant string
