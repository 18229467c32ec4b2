//go:build mutants

package parity

// Mutant names the bug injected for the model checker's mutation tests;
// only the mutants build tag (tests) has it settable. Empty: no bug.
var Mutant string

// mutantPos is the data position whose coefficient apply uses; the
// wrong-coefficient mutant uses position 0's for position 1.
func mutantPos(pos int) int {
	if Mutant == "wrong-coefficient" && pos == 1 {
		return 0
	}
	return pos
}
