package mc

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// searchGCPercent is the collector's target while a search runs. A search
// allocates states that mostly stay reachable, and at Go's default (100)
// the collector's marking took most of the CPU and kept a second BFS worker
// from paying (docs/performance.md). A GOGC set in the environment wins.
// So that a large search does not grow its heap ninefold into swap, the
// raised target comes with a soft memory limit of half the machine's
// memory (unless GOMEMLIMIT or another limit is set): near it, the
// collector runs as often as it must.
const searchGCPercent = 800

var gcMu struct {
	sync.Mutex
	running    int
	prev       int
	prevLimit  int64
	limitRaise bool
}

// raiseGC sets the collector's target for a search; the returned function
// puts back the previous settings when the last running search ends.
func raiseGC() func() {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcMu.Lock()
	if gcMu.running == 0 {
		gcMu.prev = debug.SetGCPercent(searchGCPercent)
		gcMu.prevLimit = debug.SetMemoryLimit(-1)
		gcMu.limitRaise = false
		if mem := totalMemory(); mem > 0 && gcMu.prevLimit == math.MaxInt64 && os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(int64(mem / 2))
			gcMu.limitRaise = true
		}
	}
	gcMu.running++
	gcMu.Unlock()
	return func() {
		gcMu.Lock()
		if gcMu.running--; gcMu.running == 0 {
			debug.SetGCPercent(gcMu.prev)
			if gcMu.limitRaise {
				debug.SetMemoryLimit(gcMu.prevLimit)
			}
		}
		gcMu.Unlock()
	}
}
