package runtime

import (
	"os"
	goruntime "runtime"
)

// Ps for syncing stores. A goroutine in fdatasync (pebble's WAL writer, a
// block file's sync) keeps its P until the Go scheduler's monitor takes it
// back, which can take milliseconds; on 2 cores two syncing stores then
// stall every other goroutine of the process while the CPUs idle. A
// process that opens a synced store therefore runs with more Ps than
// cores: as many again as it had, at most 4 more (measured on 2 cores:
// 1.2-1.3x the durable writes per second of GOMAXPROCS=2, and 6 Ps no
// better than 4; docs/performance.md). GOMAXPROCS in the environment
// wins.

// startProcs is GOMAXPROCS as the process started.
var startProcs = goruntime.GOMAXPROCS(0)

// SyncProcs is the GOMAXPROCS of a process with synced stores whose
// GOMAXPROCS would otherwise be n.
func SyncProcs(n int) int { return n + min(n, 4) }

// DefaultProcs is the GOMAXPROCS the process started with.
func DefaultProcs() int { return startProcs }

// procsForSyncs raises GOMAXPROCS to SyncProcs(DefaultProcs()) unless
// the environment sets it or it is that high already.
func procsForSyncs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if p := SyncProcs(startProcs); goruntime.GOMAXPROCS(0) < p {
		goruntime.GOMAXPROCS(p)
	}
}
