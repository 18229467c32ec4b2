package check

import (
	"bytes"
	"fmt"
	"github.com/amalgam-store/amalgam/mc"
	"strings"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/witness"
	"github.com/amalgam-store/amalgam/workload"
)

// Amalgam builds the nodes of an Amalgam cluster in configuration cfg: a
// data, parity and witness server per machine and one workload client per
// script (client i at "client/i" with id i+1).
func Amalgam(cfg msg.Config, code *erasure.Code, scripts [][][]msg.Op) map[node.Addr]node.Node {
	nodes := map[node.Addr]node.Node{}
	for m := 0; m < cfg.Layout.N; m++ {
		nodes[msg.DataAddr(m)] = data.New(cfg, m)
		nodes[msg.ParityAddr(m)] = parity.New(cfg, m, code)
		if cfg.Layout.W > 0 {
			nodes[msg.WitnessAddr(m)] = witness.New(cfg, m)
		}
	}
	for i, sc := range scripts {
		nodes[msg.ClientAddr(i)] = workload.NewClient(uint64(i+1), cfg.Layout, sc)
	}
	return nodes
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
