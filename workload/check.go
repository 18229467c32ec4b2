package workload

import (
	"fmt"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/anishathalye/porcupine"
)

// CheckStop is how long Check lets porcupine search: a hang guard that
// turns a search that never ends into a clear failure, not a budget. The
// tests bound their histories by operation counts, and porcupine decides
// each of them in well under a second on an idle machine.
const CheckStop = 10 * time.Minute

// Verdict is porcupine's answer on a history, with the history's size.
type Verdict struct {
	Result  porcupine.CheckResult
	Info    porcupine.LinearizationInfo
	Ops     int // operations in the history
	Shards  int // partitions porcupine checked separately
	Largest int // operations in the largest partition
}

// Check decides whether h is linearizable under Model(l). It returns
// porcupine.Unknown only when the search ran past CheckStop.
func Check(l erasure.Layout, h []porcupine.Operation) Verdict {
	m := Model(l)
	v := Verdict{Ops: len(h)}
	for _, p := range m.Partition(h) {
		v.Shards++
		v.Largest = max(v.Largest, len(p))
	}
	v.Result, v.Info = porcupine.CheckOperationsVerbose(m, h, CheckStop)
	return v
}

// Problem is "" for a linearizable history, else why the test fails: the
// history is not linearizable, or porcupine did not decide it before
// CheckStop (which says nothing about the history).
func (v Verdict) Problem() string {
	switch v.Result {
	case porcupine.Ok:
		return ""
	case porcupine.Illegal:
		return fmt.Sprintf("the history of %d operations is not linearizable", v.Ops)
	default:
		return fmt.Sprintf("porcupine did not decide the history of %d operations (%d shards, the largest %d) within %v; bound the history",
			v.Ops, v.Shards, v.Largest, CheckStop)
	}
}

// String summarizes the check for a test's log.
func (v Verdict) String() string {
	return fmt.Sprintf("porcupine: %v on %d operations (%d shards, the largest %d)",
		v.Result, v.Ops, v.Shards, v.Largest)
}
