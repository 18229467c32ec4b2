package check

import (
	"fmt"

	"github.com/amalgam-store/amalgam/mc"
)

// The invariants mutants are found by.
const (
	Inv341        = "committed deltas at f+1 servers, committed in op order (3.4.1)"
	InvParity     = "parity consistent on quiescent stripes"
	InvAtMostOnce = "at most one result per request"
	InvLinear     = "results linearizable"
	InvSLC        = "at most f blocks of a stripe degraded (SLC, 3.4.2)"
)

// Mutant is an injected bug and the search of `amalgam-cli mc run` that
// finds it: its scenario, strategy and seed, and the invariant that fails.
// The bugs exist only in binaries built with the mutants tag (SetMutant).
type Mutant struct {
	Name string `json:"name"`
	// Kind is protocol, persistence, recovery or liveness.
	Kind     string      `json:"kind"`
	Bug      string      `json:"bug"`
	Scenario string      `json:"scenario"`
	Strategy mc.Strategy `json:"strategy"`
	Seed     uint64      `json:"seed"`
	Finds    string      `json:"finds"`
}

// Mutants lists every mutant, protocol ones first.
func Mutants() []Mutant { return mutants }

// LookupMutant finds a mutant by name.
func LookupMutant(name string) (Mutant, error) {
	for _, m := range mutants {
		if m.Name == name {
			return m, nil
		}
	}
	return Mutant{}, fmt.Errorf("unknown mutant %q (mc list --mutants lists them)", name)
}

var mutants = []Mutant{
	{"commit-f-1", "protocol", "commit after f-1 acknowledgements", "normal", mc.BFS, 1, Inv341},
	{"commit-out-of-order", "protocol", "commit an op whose predecessor lacks a quorum", "two-stripes", mc.BFS, 1, Inv341},
	{"backlog-out-of-order", "protocol", "with three ops pending, an op commits past earlier ones that lack a quorum", "backlog", mc.BFS, 1, Inv341},
	{"backlog-txn-first-stripe", "protocol", "with three ops pending, a multi-stripe op commits on its first stripe's quorum", "backlog", mc.BFS, 1, Inv341},
	{"txn-first-stripe", "protocol", "multi-stripe op commits on its first stripe's quorum", "txn", mc.BFS, 1, Inv341},
	{"forget-result", "protocol", "client table forgets a committed result", "normal-lossy", mc.BFS, 1, InvAtMostOnce},
	{"retry-reexecutes", "protocol", "retry of an in-progress request executes again", "normal-lossy", mc.BFS, 1, InvAtMostOnce},
	{"delta-new-value", "protocol", "PREPARE carries the new bytes, not old XOR new", "witness", mc.BFS, 1, InvParity},
	{"delta-after-put", "protocol", "delta computed after the block is updated (zero)", "normal", mc.BFS, 1, InvParity},
	{"apply-twice", "protocol", "parity applies a delta twice (COMMIT and DROP)", "normal", mc.BFS, 1, InvParity},
	{"wrong-coefficient", "protocol", "parity uses position 0's coefficient for position 1", "two-clients", mc.BFS, 1, InvParity},
	{"apply-on-prepare", "protocol", "parity folds a delta in on PREPARE, before commit", "normal", mc.BFS, 1, Inv341},
	{"witness-ack-without-holding", "protocol", "witness acknowledges without keeping the PREPARE", "witness", mc.BFS, 1, Inv341},

	{"data-no-opnum", "persistence", "the op counter is not persisted: a restarted data server numbers from 1 again",
		"restart-data", mc.BFS, 1, Inv341},
	{"data-no-blocks", "persistence", "the data server's Restore forgets its blocks", "restart-data", mc.BFS, 1, InvParity},
	{"data-no-clients", "persistence", "the data server's Restore forgets its client table: a retry after the restart executes again",
		"restart-data-retry", mc.BFS, 1, InvAtMostOnce},
	{"parity-no-prepares", "persistence", "a parity server's Restore forgets the PREPAREs it held", "restart-parity", mc.BFS, 1, InvParity},
	{"parity-no-blocks", "persistence", "a parity server's Restore forgets its parity blocks", "restart-parity", mc.BFS, 1, InvParity},
	{"witness-no-prepares", "persistence", "a witness's Restore forgets the PREPAREs it held", "restart-witness", mc.BFS, 1, Inv341},
	{"release-before-durable", "persistence", "a server's messages leave before the state that justifies them is durable: restarted, it reads what it persisted before its last handler",
		"restart-data", mc.BFS, 1, Inv341},
	{"prepare-before-durable", "persistence", "a data server's PREPAREs leave before the operation they carry is durable: restarted, it has forgotten the request",
		"restart-data-two", mc.BFS, 1, InvParity},
	{"ack-before-durable", "persistence", "a parity server acknowledges a PREPARE before holding it is durable: restarted, it has forgotten the PREPARE",
		"restart-parity", mc.BFS, 1, InvParity},
	{"snapshot-restart-recopy", "persistence", "a restarted parity server answers a snapshot it had not answered, from copies taken again at the restart (a later cut than its first marker's)",
		"restart-parity-snapshot", mc.Random, 1, InvParity},
	{"witness-no-fence", "persistence", "a witness does not persist its incarnation and fences: restarted, it takes PREPAREs from the replaced data server",
		"restart-witness-replace-data", mc.Random, 3, InvLinear},

	{"chain-keeps-gaps", "recovery", "the chain keeps operations after a gap in op numbers", "replace-data-txn", mc.Random, 1, InvLinear},
	{"quorum-one-short", "recovery", "a data server replacement completes one answer short", "replace-witness", mc.Random, 1, InvLinear},
	{"no-fence", "recovery", "parity servers keep accepting the replaced data server", "replace-data", mc.Random, 1, InvParity},
	{"install-chain-only", "recovery", "parity servers apply only the chain, not their own PREPAREs up to tau", "replace-data", mc.Random, 1, InvParity},
	{"snapshot-first-marker", "recovery", "a parity server answers a snapshot on the first marker", "snapshot-under-writes", mc.Random, 1, InvParity},
	{"snapshot-copy-frozen", "recovery", "the snapshot copy misses PREPAREs that arrive before a data server's marker", "snapshot-under-writes", mc.Random, 1, InvParity},
	{"serve-degraded", "recovery", "a replacement data server serves a block it has not rebuilt", "replace-data", mc.Random, 1, InvLinear},
	{"snapshot-answer-uncommitted", "recovery", "a data server answers a snapshot before its earlier operations commit", "replace-parity", mc.Random, 1, Inv341},
	{"held-old-config", "recovery", "a held request is answered from a block rebuilt under an older configuration: the rebuild takes snapshot answers of an older configuration",
		"held-across-replacements", mc.Random, 1, InvParity},
	{"snapshot-cow-shared", "recovery", "a parity server folds a delta into a copy-on-write snapshot copy without copying it, changing the parity block it shares",
		"snapshot-under-writes", mc.Random, 1, InvParity},
	{"snapshot-mixed-cuts", "recovery", "a parity server copies a multi-stripe snapshot's later stripes at the last marker, not the first: two cuts in one run",
		"multi-stripe-snapshot", mc.Random, 1, InvParity},
	{"ignore-slc", "recovery", "the service replaces a server of a stripe that already has f degraded blocks", "suspect-degraded-stripe", mc.Random, 1, InvSLC},

	{"same-spare", "liveness", "two machines suspected in one round get the same spare", "failover-two", mc.Random, 1, "distinct spares"},
	{"stale-after-resume", "liveness", "a resumed detector adds the paused time to every silence count and starts no grace",
		"failover-one", mc.Random, 1, "grace respected"},
	{"move-without-replace", "liveness", "a slot moves to a spare without its servers' replacement", "failover-one", mc.Random, 1, "heals within 150 events"},
}
