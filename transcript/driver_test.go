// Package transcript holds golden-transcript tests of Amalgam's commit and
// replacement protocols: real data, parity and witness servers and the
// reconfiguration service on a test network (node/nodetest), driven step
// by step by the commands in testdata/ (see transcript_test.go).
package transcript

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/witness"
)

// layout: stripe 0 has data on machines 0, 1, 2 (blocks 0, 1, 2), parity
// on 3 and 4 and the witness on 5; stripe 1 has data on 5, 0, 1 (blocks
// 3, 4, 5), parity on 2 and 3 and the witness on 4. Every machine runs
// all three servers.
var layout = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 2, BlockSize: 4}

// deliveryLimit bounds deliver-all, so that a protocol that never settles
// fails instead of running forever.
const deliveryLimit = 10000

// driver is one cluster under test.
type driver struct {
	net  *nodetest.Net
	code *erasure.Code
	seq  map[uint64]uint64 // the last request number of each client
}

func newDriver() (*driver, error) {
	code, err := erasure.NewCode(layout.G, layout.F)
	if err != nil {
		return nil, err
	}
	cfg := msg.InitialConfig(layout)
	nodes := map[node.Addr]node.Node{msg.ReconfigAddr: reconfig.New(cfg)}
	for m := 0; m < layout.N; m++ {
		nodes[msg.DataAddr(m)] = data.New(cfg, m)
		nodes[msg.ParityAddr(m)] = parity.New(cfg, m, code)
		nodes[msg.WitnessAddr(m)] = witness.New(cfg, m)
	}
	return &driver{net: nodetest.NewNet(nodes), code: code, seq: map[uint64]uint64{}}, nil
}

func (d *driver) service() *reconfig.Service { return d.net.Node(msg.ReconfigAddr).(*reconfig.Service) }

// request sends a client request to the data server of its first block
// and delivers it at once.
func (d *driver) request(client uint64, ops ...msg.Op) string {
	d.seq[client]++
	to := msg.DataAddr(layout.Shard(ops[0].Block))
	d.net.Inject(msg.ClientAddr(int(client)), to, msg.Request{Client: client, Seq: d.seq[client], Ops: ops})
	return d.deliver(d.net.Next(msg.ClientAddr(int(client)), to))
}

// deliver delivers InFlight()[i] and renders it with what the receiver did.
func (d *driver) deliver(i int) string {
	e, effs, handled := d.net.Deliver(i)
	var b strings.Builder
	b.WriteString(envelope(e))
	if !handled && d.net.Node(e.To) != nil {
		b.WriteString(" (dropped: crashed)")
	}
	for _, ef := range effs {
		b.WriteString("\n  ")
		b.WriteString(effect(ef))
	}
	return b.String()
}

// deliverAll delivers, oldest first, every message keep accepts, one line
// each.
func (d *driver) deliverAll(keep func(nodetest.Envelope) bool) (string, error) {
	var lines []string
	_, err := d.net.DeliverAll(deliveryLimit, keep, func(e nodetest.Envelope, _ nodetest.Effects, handled bool) {
		line := envelope(e)
		if !handled && d.net.Node(e.To) != nil {
			line += " (dropped: crashed)"
		}
		lines = append(lines, line)
	})
	if len(lines) == 0 {
		lines = append(lines, "nothing to deliver")
	}
	return strings.Join(lines, "\n"), err
}

// replace asks the reconfiguration service to replace the current
// incarnation of the server at a, as an operator would.
func (d *driver) replace(a node.Addr) (string, error) {
	role, m, err := msg.ParseAddr(a)
	if err != nil {
		return "", err
	}
	cfg := d.service().Config()
	r := msg.Replace{Machine: m}
	switch role {
	case "data":
		r.Role, r.Inc = erasure.RoleData, cfg.Data[m]
	case "parity":
		r.Role, r.Inc = erasure.RoleParity, cfg.Parity[m]
	case "witness":
		r.Role, r.Inc = erasure.RoleWitness, cfg.Witness[m]
	default:
		return "", fmt.Errorf("cannot replace %s", a)
	}
	d.net.Inject("admin", msg.ReconfigAddr, r)
	return d.deliver(d.net.Next("admin", msg.ReconfigAddr)), nil
}

// state renders what the server at a holds.
func (d *driver) state(a node.Addr) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", a)
	if d.net.Crashed(a) {
		b.WriteString(" crashed")
	}
	switch s := d.net.Node(a).(type) {
	case *data.Server:
		fmt.Fprintf(&b, " config %d incarnation %d op_num %d pending %d", s.ConfigNum(), s.Incarnation(), s.NextOpNum(), s.PendingOps())
		for _, blk := range layout.ShardBlocks(s.Machine()) {
			st, _ := layout.Locate(blk)
			if s.Degraded(st) {
				fmt.Fprintf(&b, " block %d degraded", blk)
			} else {
				fmt.Fprintf(&b, " block %d = %s", blk, blockHex(s.Block(blk)))
			}
		}
	case *parity.Server:
		fmt.Fprintf(&b, " config %d incarnation %d", s.ConfigNum(), s.Incarnation())
		for _, st := range layout.StripesAs(s.Machine(), erasure.RoleParity) {
			if s.Degraded(st) {
				fmt.Fprintf(&b, " stripe %d degraded", st)
			} else {
				fmt.Fprintf(&b, " stripe %d = %s", st, blockHex(s.Block(st)))
			}
		}
		var ops []string
		for sh := 0; sh < layout.N; sh++ {
			if n := s.OpNum(sh); n > 0 {
				ops = append(ops, fmt.Sprintf("%d:%d", sh, n))
			}
		}
		fmt.Fprintf(&b, " op_nums [%s]", strings.Join(ops, " "))
		for _, h := range s.Prepares() {
			fmt.Fprintf(&b, "\n  holds %s applied=%v", prepRef(h.P), h.Applied)
		}
	case *witness.Server:
		fmt.Fprintf(&b, " config %d incarnation %d", s.ConfigNum(), s.Incarnation())
		for _, h := range s.Prepares() {
			fmt.Fprintf(&b, "\n  holds %s", prepRef(h.P))
		}
	case *reconfig.Service:
		cfg := s.Config()
		fmt.Fprintf(&b, " config %d data %v parity %v witness %v degraded %v busy %v",
			cfg.Num, cfg.Data, cfg.Parity, cfg.Witness, s.Degraded(), s.Busy())
	default:
		return "", fmt.Errorf("no server at %s", a)
	}
	return b.String(), nil
}

// checkParity compares each parity server's block with the encoding of
// the data servers' blocks; bad lists the blocks that differ.
func (d *driver) checkParity() (out string, bad []string, err error) {
	var lines []string
	for st := 0; st < layout.Stripes; st++ {
		blocks := make([][]byte, layout.G)
		for pos := range blocks {
			s := d.net.Node(msg.DataAddr(layout.DataMachine(st, pos))).(*data.Server)
			if s.Degraded(st) {
				return "", nil, fmt.Errorf("stripe %d: data/%d is degraded", st, s.Machine())
			}
			blocks[pos] = make([]byte, layout.BlockSize)
			copy(blocks[pos], s.Block(layout.Block(st, pos)))
		}
		want, err := d.code.Encode(blocks)
		if err != nil {
			return "", nil, err
		}
		for k := 0; k < layout.F; k++ {
			p := d.net.Node(msg.ParityAddr(layout.ParityMachine(st, k))).(*parity.Server)
			got := p.Block(st)
			if got == nil {
				got = make([]byte, layout.BlockSize)
			}
			verdict := "matches"
			line := fmt.Sprintf("stripe %d parity %d (parity/%d) = %s", st, k, p.Machine(), blockHex(got))
			if p.Degraded(st) || !bytes.Equal(got, want[k]) {
				verdict = "MISMATCH, want " + hex.EncodeToString(want[k])
				bad = append(bad, line+", want "+hex.EncodeToString(want[k]))
			}
			lines = append(lines, line+" "+verdict)
		}
	}
	return strings.Join(lines, "\n"), bad, nil
}

func blockHex(b []byte) string {
	if b == nil {
		return strings.Repeat("00", layout.BlockSize)
	}
	return hex.EncodeToString(b)
}

func envelope(e nodetest.Envelope) string {
	how := "->"
	if e.Stream {
		how = "=>"
	}
	return fmt.Sprintf("%s %s %s %s", e.From, how, e.To, describe(e.Msg))
}

func effect(e nodetest.Effect) string {
	switch e.Kind {
	case nodetest.Timer:
		return fmt.Sprintf("timer %s", nodetest.Format(e.Timer))
	case nodetest.Stream:
		return fmt.Sprintf("=> %s %s", e.To, describe(e.Msg))
	}
	return fmt.Sprintf("-> %s %s", e.To, describe(e.Msg))
}

// prepRef names one stripe's part of an operation.
func prepRef(p msg.Prepare) string {
	delta := "read"
	if p.Delta != nil {
		delta = hex.EncodeToString(p.Delta)
	}
	return fmt.Sprintf("shard%d/op%d/stripe%d(primary %d, delta %s)", p.Shard, p.OpNum, p.Stripe, p.Primary, delta)
}

func prepRefs(ps []msg.Prepare) string {
	var out []string
	for _, p := range ps {
		out = append(out, prepRef(p))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// describe renders a message; configurations and PREPARE lists, which
// the generic rendering spells out in full, are shortened.
func describe(m node.Message) string {
	switch m := m.(type) {
	case msg.NewConfig:
		c := m.Config
		s := fmt.Sprintf("NewConfig{Num:%d Changed:%s Data:%v Parity:%v Witness:%v", c.Num, c.Changed, c.Data, c.Parity, c.Witness)
		if in := m.Install; in != nil {
			s += fmt.Sprintf(" Install:{Shard:%d Upto:%d Chain:%s Clients:%d}", in.Shard, in.Upto, prepRefs(in.Chain), len(in.Clients))
		}
		return s + "}"
	case msg.StopShardOK:
		return fmt.Sprintf("StopShardOK{Num:%d Shard:%d OpNum:%d Prepares:%s Clients:%d}", m.Num, m.Shard, m.OpNum, prepRefs(m.Prepares), len(m.Clients))
	case msg.Prepare:
		return "Prepare " + prepRef(m) + fmt.Sprintf(" client %d seq %d", m.Client, m.Seq)
	}
	return nodetest.Format(m)
}

// parseAddrs checks the addresses a command names.
func (d *driver) parseAddrs(args []string) ([]node.Addr, error) {
	var out []node.Addr
	for _, a := range args {
		if d.net.Node(node.Addr(a)) == nil {
			return nil, fmt.Errorf("no server at %q (servers: %v)", a, d.net.Addrs())
		}
		out = append(out, node.Addr(a))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("name a server")
	}
	return slices.Clip(out), nil
}
