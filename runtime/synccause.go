package runtime

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/amalgam-store/amalgam/node"
)

// Sync causes: an opt-in count of the store writes of every host of the
// process, by what made them (the benchmarks' breakdown of syncs per
// write, docs/performance.md). A batch's cause is the role of its node
// (the address up to '/'), the kinds of messages it handled (timers and
// functions as "timer" and "fn"), the kinds it streamed, whether it sent
// unordered messages, and whether it was synced or waited for a later
// sync (lazy, batch.go); a store's background sync for lazy batches
// counts as "store background sync", and every fsync of a store's files
// as "fsync <wal|table|manifest|dir|other>".
var causes struct {
	on atomic.Bool
	mu sync.Mutex
	m  map[string]int
}

// CountSyncCauses starts (on) or stops counting store writes by cause and
// clears the counts.
func CountSyncCauses(on bool) {
	causes.mu.Lock()
	causes.m = map[string]int{}
	causes.mu.Unlock()
	causes.on.Store(on)
}

// SyncCauses returns the counts since CountSyncCauses(true).
func SyncCauses() map[string]int {
	causes.mu.Lock()
	defer causes.mu.Unlock()
	out := make(map[string]int, len(causes.m))
	for k, v := range causes.m {
		out[k] = v
	}
	return out
}

func countCause(c string) {
	causes.mu.Lock()
	causes.m[c]++
	causes.mu.Unlock()
}

func role(a node.Addr) string {
	r, _, _ := strings.Cut(string(a), "/")
	return r
}

// kinds is a sorted set of message kinds.
type kinds []string

func (k *kinds) add(s string) {
	if i, found := slices.BinarySearch(*k, s); !found {
		*k = slices.Insert(*k, i, s)
	}
}

func kindOf(m node.Message) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "msg.")
}

// batchCause names a batch's cause.
func batchCause(a node.Addr, handled kinds, rd *ready, carried bool) string {
	var out kinds
	for _, x := range rd.appends {
		out.add(strings.TrimPrefix(fmt.Sprintf("%T", x.e.m.GetBody()), "*wire.Message_"))
	}
	c := role(a) + " in[" + strings.Join(handled, ",") + "] out[" + strings.Join(out, ",") + "]"
	if len(rd.sends) > 0 {
		c += " +send"
	}
	if carried {
		return c + " carried"
	}
	if rd.lazy {
		return c + " lazy"
	}
	return c + " synced"
}
