package check

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/witness"
	"github.com/amalgam-store/amalgam/workload"
)

// The Amalgam predicate library. Every predicate reads nodes through their
// exported read-only views and never modifies a state.

// ParityConsistency is invariant (a): the parity blocks of every quiescent
// stripe encode its data blocks. Results are cached by the servers' states
// and the stripes with protocol messages on streams.
func ParityConsistency(l erasure.Layout, code *erasure.Code) mc.Predicate {
	// Only passes are cached (a failure ends the search), so the cache
	// holds no pointers for the garbage collector to scan.
	c := mc.NewCache[[2]uint64, struct{}](mc.PredEntries)
	return mc.Pred("parity consistent on quiescent stripes", func(s *mc.State) (bool, string) {
		busy, small := streamBusy(s)
		k := [2]uint64{s.ServersKey(), busy}
		if _, hit := c.Get(k, mc.Mix(k[0]^k[1])); small && hit {
			return true, "every quiescent stripe's parity encodes its data"
		}
		if err := ParityConsistent(s, l, code); err != nil {
			return false, err.Error()
		}
		if small {
			c.Put(k, mc.Mix(k[0]^k[1]), struct{}{})
		}
		return true, "every quiescent stripe's parity encodes its data"
	}).Projected(parityReads(l))
}

// streamBusy is the set of stripes (< 64) that a PREPARE, PREPARE-OK,
// COMMIT or PREPARE-DROP on a stream is for; small is false if a stripe
// is 64 or more.
func streamBusy(s *mc.State) (mask uint64, small bool) {
	small = true
	s.StreamMessages(func(e mc.Envelope) {
		st := -1
		switch m := e.Msg.(type) {
		case msg.Prepare:
			st = m.Stripe
		case msg.Commit:
			st = m.Stripe
		case msg.PrepareDrop:
			st = m.Stripe
		case msg.PrepareOK:
			st = m.Stripe
		}
		if st >= 64 {
			small = false
		} else if st >= 0 {
			mask |= 1 << st
		}
	})
	return mask, small
}

// StripesRecoverable is the Server Liveness Criterion (thesis 3.4.2) as an
// invariant: no stripe has more than f degraded blocks (Recoverable).
func StripesRecoverable(l erasure.Layout) mc.Predicate {
	return mc.Pred("at most f blocks of a stripe degraded (SLC, 3.4.2)", func(s *mc.State) (bool, string) {
		if err := Recoverable(s, l); err != nil {
			return false, err.Error()
		}
		return true, "every stripe has at most f degraded blocks"
	}).Projected(slcReads(l))
}

// Quiescent reports whether stripe st has no operation in progress: no
// data server has it in pending_ops, no parity server or witness holds a
// PREPARE for it, no protocol message for it is in flight, and no server
// of the stripe is degraded (rebuilding it after a replacement), and every
// server has the reconfiguration service's newest configuration.
func Quiescent(s *mc.State, l erasure.Layout, st int) bool {
	busy := false
	s.StreamMessages(func(e mc.Envelope) {
		switch m := e.Msg.(type) {
		case msg.Prepare:
			busy = busy || m.Stripe == st
		case msg.Commit:
			busy = busy || m.Stripe == st
		case msg.PrepareDrop:
			busy = busy || m.Stripe == st
		case msg.PrepareOK:
			busy = busy || m.Stripe == st
		}
	})
	if busy {
		return false
	}
	latest := uint64(0)
	if rc, ok := s.Node(msg.ReconfigAddr).(*reconfig.Service); ok {
		latest = rc.Config().Num
	}
	for m := 0; m < l.N; m++ {
		for _, a := range []node.Addr{msg.DataAddr(m), msg.ParityAddr(m), msg.WitnessAddr(m)} {
			if c, ok := s.Node(a).(interface{ ConfigNum() uint64 }); ok && c.ConfigNum() != latest {
				return false // an install or replacement is still on its way
			}
		}
		if d, ok := s.Node(msg.DataAddr(m)).(*data.Server); ok && (d.PendingOn(st) || d.Degraded(st)) {
			return false
		}
		if p, ok := s.Node(msg.ParityAddr(m)).(*parity.Server); ok && (p.HoldsOn(st) || p.Degraded(st)) {
			return false
		}
		if w, ok := s.Node(msg.WitnessAddr(m)).(*witness.Server); ok && w.HoldsOn(st) {
			return false
		}
	}
	return true
}

// ParityConsistent checks invariant (a): every parity block of every
// quiescent stripe equals the encoding of the stripe's data blocks.
func ParityConsistent(s *mc.State, l erasure.Layout, code *erasure.Code) error {
	for st := 0; st < l.Stripes; st++ {
		if !Quiescent(s, l, st) {
			continue
		}
		if err := StripeConsistent(s, l, code, st); err != nil {
			return err
		}
	}
	return nil
}

// StripeConsistent compares stripe st's parity blocks with the encoding of
// its data blocks.
func StripeConsistent(s *mc.State, l erasure.Layout, code *erasure.Code, st int) error {
	dataBlocks, parityBlocks := StripeBlocks(s, l, st)
	want, err := code.Encode(dataBlocks)
	if err != nil {
		return err
	}
	for k := range want {
		if !bytes.Equal(parityBlocks[k], want[k]) {
			return fmt.Errorf("parity: stripe %d parity block %d (machine %d) is %x, encoding of the data is %x",
				st, k, l.ParityMachine(st, k), parityBlocks[k], want[k])
		}
	}
	return nil
}

// StripeBlocks returns the data blocks and parity blocks of stripe st as
// the servers hold them now.
func StripeBlocks(s *mc.State, l erasure.Layout, st int) (dataBlocks, parityBlocks [][]byte) {
	for pos := 0; pos < l.G; pos++ {
		d := s.Node(msg.DataAddr(l.DataMachine(st, pos))).(*data.Server)
		dataBlocks = append(dataBlocks, d.Block(l.Block(st, pos)))
	}
	for k := 0; k < l.F; k++ {
		p := s.Node(msg.ParityAddr(l.ParityMachine(st, k))).(*parity.Server)
		parityBlocks = append(parityBlocks, p.Block(st))
	}
	return dataBlocks, parityBlocks
}

// Recoverable checks the Server Liveness Criterion (thesis 3.4.2) as an
// invariant of the reconfiguration service's choices: no stripe has more
// than f degraded blocks, so every stripe can still be rebuilt from g
// blocks. A block is degraded when its server's incarnation has not
// rebuilt it, or when the service replaced the server and the new
// incarnation has not started yet (the old one no longer counts). Crashed
// servers the service has not replaced do not count: the service cannot
// know of them.
func Recoverable(s *mc.State, l erasure.Layout) error {
	rc, ok := s.Node(msg.ReconfigAddr).(*reconfig.Service)
	if !ok {
		return nil
	}
	cfg := rc.Config()
	type holder interface {
		Degraded(st int) bool
		Incarnation() uint64
	}
	// degraded calls fn for each degraded block of stripe st.
	degraded := func(st int, fn func(a node.Addr)) {
		check := func(a node.Addr, inc uint64) {
			if h, ok := s.Node(a).(holder); ok && (h.Degraded(st) || h.Incarnation() < inc) {
				fn(a)
			}
		}
		for pos := 0; pos < l.G; pos++ {
			m := l.DataMachine(st, pos)
			check(msg.DataAddr(m), cfg.Data[m])
		}
		for k := 0; k < l.F; k++ {
			m := l.ParityMachine(st, k)
			check(msg.ParityAddr(m), cfg.Parity[m])
		}
	}
	for st := 0; st < l.Stripes; st++ {
		n := 0
		degraded(st, func(node.Addr) { n++ })
		if n > l.F {
			var names []string
			degraded(st, func(a node.Addr) { names = append(names, string(a)) })
			return fmt.Errorf("SLC: stripe %d has %d degraded blocks (%s), more than f=%d: it can no longer be rebuilt",
				st, n, strings.Join(names, ", "), l.F)
		}
	}
	return nil
}

// CommitInvariant is the invariant of thesis 3.4.1: a committed delta is
// held by at least f+1 servers of its stripe (the data server, which
// applied it, and parity servers or witnesses holding its PREPARE or, for
// parity servers, having applied it), and every earlier operation of the
// shard is committed too. A delta a parity server has applied must be
// committed at its data server. Degraded blocks do not exist yet (no
// recovery), and a crashed server keeps counting: its state is on disk.
//
// It reads servers through their cached views (mc.State.view), so a state
// whose servers were all seen before costs no allocation.
func CommitInvariant(l erasure.Layout) mc.Predicate {
	dataA, parityA, witnessA := make([]node.Addr, l.N), make([]node.Addr, l.N), make([]node.Addr, l.N)
	for m := 0; m < l.N; m++ {
		dataA[m], parityA[m], witnessA[m] = msg.DataAddr(m), msg.ParityAddr(m), msg.WitnessAddr(m)
	}
	// backup is the address of Backups(st)[bi], and its node index.
	backup := func(s *mc.State, st, bi int) (node.Addr, int) {
		if bi < l.F {
			m := l.ParityMachine(st, bi)
			return parityA[m], s.Index(parityA[m])
		}
		m := l.WitnessMachine(st, bi-l.F)
		return witnessA[m], s.Index(witnessA[m])
	}
	return mc.Pred("committed deltas at f+1 servers, committed in op order (3.4.1)", func(s *mc.State) (bool, string) {
		for m := 0; m < l.N; m++ {
			di := s.Index(dataA[m])
			if di < 0 {
				continue
			}
			ds, ok := s.NodeAt(di).(*data.Server)
			if !ok {
				continue
			}
			ops := view(s, di).ops
			primary := ds.Primary()
			// holds: a backup holds the delta, or (thesis 3.4.1: "or has a
			// block ... that is degraded") is being replaced and has not
			// caught up yet: a parity server with the stripe degraded, or a
			// backup the data server has fenced or is re-sending its
			// pending operations to.
			holds := func(a node.Addr, i int, opNum uint64, st int) bool {
				if holdsDelta(s, i, m, primary, opNum, st) || ds.Replacing(a) {
					return true
				}
				p, ok := s.Node(a).(*parity.Server)
				return ok && p.Degraded(st)
			}
			if rc, ok := s.Node(msg.ReconfigAddr).(*reconfig.Service); ok && rc.Config().Data[m] != primary {
				continue // replaced: what it committed was settled by the replacement's chain
			}
			var firstOpen uint64
			for _, op := range ops {
				if !op.Committed {
					if firstOpen == 0 {
						firstOpen = op.OpNum
					}
					continue
				}
				if firstOpen != 0 {
					return false, fmt.Sprintf("shard %d: op %d is committed but earlier op %d is not", m, op.OpNum, firstOpen)
				}
				for _, st := range op.Stripes {
					n := 1 // the data server
					for bi := 0; bi < l.F+l.W; bi++ {
						if a, i := backup(s, st, bi); holds(a, i, op.OpNum, st) {
							n++
						}
					}
					if n >= l.F+1 {
						continue
					}
					holders := []string{string(dataA[m])}
					for bi := 0; bi < l.F+l.W; bi++ {
						if a, i := backup(s, st, bi); holds(a, i, op.OpNum, st) {
							holders = append(holders, string(a))
						}
					}
					return false, fmt.Sprintf("shard %d op %d (client %d seq %d) is committed but stripe %d's delta is only at %s (need f+1=%d)",
						m, op.OpNum, op.Client, op.Seq, st, strings.Join(holders, ", "), l.F+1)
				}
			}
			for k := 0; k < l.N; k++ {
				pi := s.Index(parityA[k])
				if pi < 0 {
					continue
				}
				if _, ok := s.NodeAt(pi).(*parity.Server); !ok {
					continue
				}
				for _, h := range view(s, pi).held {
					if !h.Applied || h.P.Shard != m || h.P.Primary != primary {
						continue
					}
					for _, op := range ops {
						if op.OpNum <= h.P.OpNum && !op.Committed {
							return false, fmt.Sprintf("%s applied shard %d op %d, but op %d is not committed at %s",
								parityA[k], m, h.P.OpNum, op.OpNum, dataA[m])
						}
					}
				}
			}
		}
		return true, "every committed delta is at f+1 servers"
	}).Projected(commitReads(l))
}

// holdsDelta reports whether the parity server or witness at node index i
// holds the PREPARE of (shard, opNum, st) from the shard's data server
// incarnation primary, or (a parity server that knows that incarnation)
// applied and dropped it.
func holdsDelta(s *mc.State, i int, shard int, primary, opNum uint64, st int) bool {
	if i < 0 {
		return false
	}
	switch x := s.NodeAt(i).(type) {
	case *parity.Server:
		v := view(s, i)
		return v.holds(shard, primary, opNum, st) || x.PrimaryOf(shard) == primary && x.OpNum(shard) >= opNum
	case *witness.Server:
		return view(s, i).holds(shard, primary, opNum, st)
	}
	return false
}

// AtMostOnce checks that no client request executes twice: the PREPAREs
// and pending operations in the state give each (shard, client, seq) one
// op number, and all the results for one request (replies in flight and
// the reply the client kept) are equal. A request is named by shard,
// data server incarnation, client and seq (a replacement may run it again).
func AtMostOnce() mc.Predicate {
	return mc.Pred("at most one result per request", func(s *mc.State) (bool, string) {
		// Every (request, op number) held by a server or on a stream, in a
		// buffer on the stack: states hold a handful.
		type exec struct {
			k  execKey
			op uint64
		}
		var buf [64]exec
		execs := buf[:0]
		// note records an execution and returns an earlier, different op
		// number for the same request, if any.
		note := func(k execKey, op uint64) (uint64, bool) {
			for _, x := range execs {
				if x.k == k && x.op != op {
					return x.op, true
				}
			}
			execs = append(execs, exec{k, op})
			return 0, false
		}
		twice := func(k execKey, old, op uint64, where string) string {
			return fmt.Sprintf("client %d request %d executed twice on shard %d (op %d and op %d, seen at %s)",
				k.client, k.seq, k.shard, old, op, where)
		}
		for i, a := range s.Addrs() {
			switch n := s.NodeAt(i).(type) {
			case *data.Server:
				for _, op := range view(s, i).ops {
					k := execKey{n.Machine(), n.Primary(), op.Client, op.Seq}
					if old, dup := note(k, op.OpNum); dup {
						return false, twice(k, old, op.OpNum, string(a))
					}
				}
			case *parity.Server, *witness.Server:
				for _, h := range view(s, i).held {
					k := execKey{h.P.Shard, h.P.Primary, h.P.Client, h.P.Seq}
					if old, dup := note(k, h.P.OpNum); dup {
						return false, twice(k, old, h.P.OpNum, string(a))
					}
				}
			}
		}
		why := ""
		s.StreamMessages(func(e mc.Envelope) {
			if p, ok := e.Msg.(msg.Prepare); ok && why == "" {
				k := execKey{p.Shard, p.Primary, p.Client, p.Seq}
				if old, dup := note(k, p.OpNum); dup {
					why = twice(k, old, p.OpNum, "stream "+string(e.From)+"->"+string(e.To))
				}
			}
		})
		if why != "" {
			return false, why
		}
		// Results: the reply a client kept and the replies in flight to it.
		net := s.Network()
		for j, e := range net {
			r, ok := e.Msg.(msg.Reply)
			if !ok {
				continue
			}
			var other msg.Reply
			have := false
			if c, ok := s.Node(e.To).(*workload.Client); ok && r.Seq >= 1 && r.Seq <= uint64(len(c.Replies())) {
				other, have = c.Replies()[r.Seq-1], true
			}
			for _, e2 := range net[:j] {
				if r2, ok := e2.Msg.(msg.Reply); ok && !have && e2.To == e.To && r2.Seq == r.Seq {
					other, have = r2, true
				}
			}
			if have && replyHash(other) != replyHash(r) {
				return false, fmt.Sprintf("%s request %d has two different results (%s in flight from %s)",
					e.To, r.Seq, workload.DescribeReply(r), e.From)
			}
		}
		return true, "every request has at most one execution and one result"
	}).Projected(requests)
}

func replyHash(r msg.Reply) uint64 {
	var h node.Hasher
	h.Reset()
	r.Hash(&h)
	return h.Sum()
}

// Linearizable checks the workload clients' results with porcupine
// against the block store's sequential model (mc.Linearizable with
// workload.Model): pending operations may take effect at any point after
// their call, with any result.
func Linearizable(l erasure.Layout) mc.Predicate { return mc.Linearizable(workload.Model(l)) }
