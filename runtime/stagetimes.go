package runtime

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// Stage times: an opt-in record of how long a write spends in each stage
// of the hosts of this process (the benchmarks' breakdown of latency,
// docs/performance.md). The stages are, per role (the address up to '/'):
//
//	execute                      a client's call, from its arrival at the
//	                             machine until the reply leaves
//	inbox <role>                 an event waits in its loop's inbox
//	handle+write <role>          a batch is handled and written to the store
//	durable <role> synced|lazy   a written batch waits until it is released
//	fsync <kind>                 a store file's fdatasync (wal, blocks, ...)
//	stream                       a stream message, from its push to the
//	                             sender until the receiver posts it (both
//	                             ends in this process)
var stageTimes struct {
	on     atomic.Bool
	mu     sync.Mutex
	d      map[string][]time.Duration
	pushed sync.Map // [2]uint64{stream id, seq} -> time.Time
}

// CountStageTimes starts (on) or stops recording stage times and clears
// them.
func CountStageTimes(on bool) {
	stageTimes.mu.Lock()
	stageTimes.d = map[string][]time.Duration{}
	stageTimes.mu.Unlock()
	stageTimes.pushed.Clear()
	stageTimes.on.Store(on)
}

// StageTime summarises the times of one stage.
type StageTime struct {
	Stage               string
	N                   int
	Mean, P50, P90, P99 time.Duration
}

// StageTimes returns the stages recorded since CountStageTimes(true), by
// name.
func StageTimes() []StageTime {
	stageTimes.mu.Lock()
	defer stageTimes.mu.Unlock()
	var out []StageTime
	for _, k := range slices.Sorted(maps.Keys(stageTimes.d)) {
		d := slices.Clone(stageTimes.d[k])
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		n := len(d)
		out = append(out, StageTime{k, n, sum / time.Duration(n), d[n/2], d[n*9/10], d[n*99/100]})
	}
	return out
}

// stageNow is the time now if stage times are recorded, else zero.
func stageNow() time.Time {
	if stageTimes.on.Load() {
		return time.Now()
	}
	return time.Time{}
}

// stageSince records the time since t under stage, unless t is zero.
func stageSince(stage string, t time.Time) {
	if t.IsZero() || !stageTimes.on.Load() {
		return
	}
	d := time.Since(t)
	stageTimes.mu.Lock()
	if stageTimes.d != nil {
		stageTimes.d[stage] = append(stageTimes.d[stage], d)
	}
	stageTimes.mu.Unlock()
}

// stagePushed notes that message seq of stream sid went to its sender.
func stagePushed(sid, seq uint64) {
	if stageTimes.on.Load() {
		stageTimes.pushed.Store([2]uint64{sid, seq}, time.Now())
	}
}

// stagePosted records the stream stage of message seq of stream sid, if
// its push was noted in this process.
func stagePosted(sid, seq uint64) {
	if !stageTimes.on.Load() {
		return
	}
	if t, ok := stageTimes.pushed.LoadAndDelete([2]uint64{sid, seq}); ok {
		stageSince("stream", t.(time.Time))
	}
}

// durableStage names the durable stage of a batch of a's.
func durableStage(a node.Addr, lazy bool) string {
	if lazy {
		return "durable " + role(a) + " lazy"
	}
	return "durable " + role(a) + " synced"
}
