package check

import (
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/reconfig"
)

// OperatorAddr is the address of the operator node of recovery scenarios.
const OperatorAddr node.Addr = "operator"

// Operator asks the reconfiguration service for replacements when its
// timer fires, at a moment of the search's (or the simulation's) choosing,
// and asks again on later firings, up to OperatorTries times in all (a
// request names the incarnation to replace, so repeats are harmless).
type Operator struct {
	Requests []msg.Replace
	sent     int
}

// OperatorTries bounds how often an operator sends its requests.
const OperatorTries = 8

type operatorTimer struct{}

// Hash implements node.Timer.
func (operatorTimer) Hash(h *node.Hasher) { h.Tag(node.TagOperatorTimer) }

// Init implements node.Node.
func (o *Operator) Init(ctx node.Context) {
	ctx.SetTimer(operatorTimer{}, 10*time.Millisecond, 1000*time.Millisecond)
}

// Handle implements node.Node.
func (o *Operator) Handle(node.Context, node.Addr, node.Message) {}

// Timer implements node.Node.
func (o *Operator) Timer(ctx node.Context, _ node.Timer) {
	if o.sent >= OperatorTries {
		return
	}
	o.sent++
	for _, r := range o.Requests {
		ctx.Send(msg.ReconfigAddr, r)
	}
	ctx.SetTimer(operatorTimer{}, 100*time.Millisecond, 200*time.Millisecond)
}

// Sent reports whether the operator has sent its requests.
func (o *Operator) Sent() bool { return o.sent > 0 }

// Clone implements node.Node.
func (o *Operator) Clone() node.Node { c := *o; return &c }

// Hash implements node.Node.
func (o *Operator) Hash() uint64 {
	h := node.NewHasher()
	h.Int(o.sent)
	for _, r := range o.Requests {
		r.Hash(h)
	}
	return h.Sum()
}

// AddReconfig adds the reconfiguration service, and an operator asking for
// requests, to a cluster's nodes.
func AddReconfig(nodes map[node.Addr]node.Node, cfg msg.Config, requests []msg.Replace) {
	nodes[msg.ReconfigAddr] = reconfig.New(cfg)
	if len(requests) > 0 {
		nodes[OperatorAddr] = &Operator{Requests: requests}
	}
}

// Settled reports whether reconfiguration and rebuilding are over: the
// reconfiguration service has nothing to do and knows of no degraded
// server, every server has its newest configuration, and no data or
// parity server has a block to rebuild.
func Settled(s *mc.State) bool {
	rc, ok := s.Node(msg.ReconfigAddr).(*reconfig.Service)
	if !ok {
		return true
	}
	if rc.Busy() || len(rc.Degraded()) > 0 {
		return false
	}
	latest := rc.Config().Num
	for _, a := range s.Addrs() {
		n := s.Node(a)
		if c, ok := n.(interface{ ConfigNum() uint64 }); ok && (c.ConfigNum() != latest || s.Crashed(a)) {
			return false
		}
		if d, ok := n.(interface{ DegradedBlocks() int }); ok && d.DegradedBlocks() > 0 {
			return false
		}
	}
	return true
}
