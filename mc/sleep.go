package mc

import (
	"slices"
	"sync"
)

// Sleep sets (Godefroid; MODIST section 3.6), Options.SleepSets, BFS only.
// Two events are independent when both are unordered deliveries, stream
// deliveries or timer firings, at different nodes, not both at clients
// (their returns would be ordered), neither starts an incarnation (that
// ends streams from the node), no cut is active (each event shortens it)
// and, when timer firings are bounded, not both firings (they share the
// budget). Independent events commute: either order reaches the same
// state, and neither enables nor disables the other. When a state is
// expanded, an event in its sleep set is not taken: the state it leads to
// is reached through the other order. A successor's sleep set is every
// event of its parent's sleep set, and every event the parent took
// before, that is independent of the event taken.
//
// With a visited set this needs care (a state first reached with a large
// sleep set and later with a smaller one has successors not yet
// explored): each state keeps the intersection of the sleep sets it was
// reached with, and a state already expanded whose set shrinks is
// expanded again at the next level, taking every event outside its new
// set. Every reachable state is still found; fewer transitions are taken.
// Not with Options.Prunes: a slept event's state may be reachable only
// through a state that is pruned.

// sleepEv is an event of a sleep set: its identity across states and
// what independence reads.
type sleepEv struct {
	id     uint64
	target int32 // node index; -1: dependent with every event
	client bool
	fire   bool
}

const kSleep = 0x2545f4914f6cdd1d

// sleepEvent describes e, enabled in s, for sleep sets.
func (s *State) sleepEvent(e Event, set Settings) sleepEv {
	ev := sleepEv{target: -1}
	switch e.Kind {
	case Deliver, StreamIn:
		ev.id = mix(kSleep*uint64(e.Kind) ^ e.Env.hash)
		if i := int(e.Env.to) - 1; i >= 0 && !s.startsAt(i, e.Env.Msg) {
			ev.target = int32(i)
		}
	case Fire:
		i := s.sys.index[e.Node]
		ev.id = mix(mix(kSleep*uint64(Fire)^uint64(i)) ^ e.Timer)
		ev.target, ev.fire = int32(i), set.MaxTimerFires != Unlimited
	default:
		ev.id = mix(kSleep*uint64(e.Kind) ^ e.Env.hash ^ e.Timer ^ uint64(len(e.Node)))
	}
	if s.cut != 0 {
		ev.target = -1
	}
	if ev.target >= 0 {
		ev.client = slices.Contains(s.sys.clients, int(ev.target))
	}
	return ev
}

func independent(a, b sleepEv) bool {
	return a.target >= 0 && b.target >= 0 && a.target != b.target &&
		!(a.client && b.client) && !(a.fire && b.fire)
}

func sleeps(z []sleepEv, id uint64) bool {
	return slices.ContainsFunc(z, func(x sleepEv) bool { return x.id == id })
}

// childSleep is the sleep set of the state e leads to from a state with
// sleep set z, where done were taken before e.
func childSleep(z, done []sleepEv, e sleepEv) []sleepEv {
	var out []sleepEv
	for _, l := range [2][]sleepEv{z, done} {
		for _, t := range l {
			if independent(t, e) && !sleeps(out, t.id) {
				out = append(out, t)
			}
		}
	}
	return out
}

// sleepStore keeps each state's sleep set (the intersection of those it
// was reached with) and the BFS level it waits at or was expanded at.
type sleepStore struct {
	shards [64]struct {
		sync.Mutex
		m map[uint64]*sleepEntry
	}
}

type sleepEntry struct {
	level int32
	z     []sleepEv // never modified: replaced
}

func newSleepStore() *sleepStore {
	st := &sleepStore{}
	for i := range st.shards {
		st.shards[i].m = map[uint64]*sleepEntry{}
	}
	return st
}

// get is fp's sleep set.
func (st *sleepStore) get(fp uint64) []sleepEv {
	sh := &st.shards[fp>>58]
	sh.Lock()
	defer sh.Unlock()
	if e := sh.m[fp]; e != nil {
		return e.z
	}
	return nil
}

// arrive records that fp was reached at level with sleep set z, and
// reports whether it must be expanded (again) at level: it was expanded at
// an earlier level (or is being expanded) with a sleep set that now
// shrank. A state that waits at level is expanded with the set as it is
// when the level ends.
func (st *sleepStore) arrive(fp uint64, level int, z []sleepEv) (again bool) {
	sh := &st.shards[fp>>58]
	sh.Lock()
	defer sh.Unlock()
	e := sh.m[fp]
	if e == nil {
		sh.m[fp] = &sleepEntry{level: int32(level), z: z}
		return false
	}
	var in []sleepEv
	for _, t := range e.z {
		if sleeps(z, t.id) {
			in = append(in, t)
		}
	}
	if len(in) == len(e.z) {
		return false
	}
	e.z = in
	if e.level == int32(level) {
		return false
	}
	e.level = int32(level)
	return true
}
