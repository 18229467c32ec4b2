// Package online is the client side of online checking
// (docs/model-checking.md, "Online checking"): it joins the machines'
// snapshots (runtime.Snapshot) into a consistent cut, rebuilds the
// checker's state from it through the servers' own Restore, and searches
// from there with Amalgam's invariants.
package online

import (
	"bytes"
	"cmp"
	"encoding/gob"
	"fmt"
	"os"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/check"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// Cut is a consistent cut of a running cluster: every server's state and
// the stream messages in flight between them.
type Cut struct {
	Cluster  string
	Layout   erasure.Layout
	Nodes    []runtime.NodeSnapshot // by address
	InFlight []Message              // per stream in order
}

// Message is a stream message in flight at the cut.
type Message struct {
	From, To node.Addr
	Seq      uint64
	Msg      []byte // a marshalled wire.Message
}

// Decode returns the protocol message m carries.
func (m Message) Decode() (node.Message, error) {
	var p wire.Message
	if err := proto.Unmarshal(m.Msg, &p); err != nil {
		return nil, err
	}
	return wire.MessageFromProto(&p)
}

// NewCut joins the snapshots of every machine of one cluster. A stream's
// messages in flight are those its sender numbered and its receiver had
// not applied: they are in the sender's unacknowledged queue. It fails
// when the snapshots are of different clusters, or are not a cut: a
// receiver applied a message its sender had not numbered yet when its
// own snapshot was taken, or the sender had already dropped (as
// acknowledged) a message its receiver had not applied at its snapshot.
// Unordered messages in flight are not captured: they count as lost.
func NewCut(snaps []*runtime.Snapshot) (*Cut, error) {
	if len(snaps) == 0 {
		return nil, fmt.Errorf("no snapshots")
	}
	c := &Cut{Cluster: snaps[0].Cluster, Layout: snaps[0].Layout}
	for _, s := range snaps {
		if s.Cluster != c.Cluster {
			return nil, fmt.Errorf("snapshots of two clusters: %s and %s", c.Cluster, s.Cluster)
		}
		c.Nodes = append(c.Nodes, s.Nodes...)
	}
	slices.SortFunc(c.Nodes, func(a, b runtime.NodeSnapshot) int { return cmp.Compare(a.Addr, b.Addr) })
	byAddr := map[node.Addr]*runtime.NodeSnapshot{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if byAddr[n.Addr] != nil {
			return nil, fmt.Errorf("node %s is in two snapshots", n.Addr)
		}
		byAddr[n.Addr] = n
	}
	for _, s := range c.Nodes {
		for _, o := range s.Out {
			r := byAddr[o.To]
			if r == nil {
				continue // not a server of the cut (a client, the reconfiguration service)
			}
			var applied uint64
			for _, in := range r.In {
				if in.From == s.Addr && in.Stream == o.Stream {
					applied = in.Applied
				}
			}
			if applied >= o.Next {
				return nil, fmt.Errorf("not a cut: %s applied message %d from %s, which had numbered only %d", o.To, applied, s.Addr, o.Next-1)
			}
			want := applied + 1
			for _, q := range o.Queue {
				if q.Seq < want {
					continue
				}
				if q.Seq != want {
					break
				}
				c.InFlight = append(c.InFlight, Message{From: s.Addr, To: o.To, Seq: q.Seq, Msg: q.Msg})
				want++
			}
			if want != o.Next {
				return nil, fmt.Errorf("not a cut: %s had dropped message %d to %s as acknowledged, which %s had not applied at its snapshot", s.Addr, want, o.To, o.To)
			}
		}
	}
	return c, nil
}

// Restore rebuilds every server of the cut through its own Restore, from
// what its Persist wrote at the cut, in the cluster's initial
// configuration (the servers' persisted configuration replaces it).
func (c *Cut) Restore() (map[node.Addr]node.Node, error) {
	code, err := erasure.NewCode(c.Layout.G, c.Layout.F)
	if err != nil {
		return nil, fmt.Errorf("cut of cluster %s: %v", c.Cluster, err)
	}
	fresh := check.Amalgam(msg.InitialConfig(c.Layout), code, nil)
	nodes := map[node.Addr]node.Node{}
	for _, s := range c.Nodes {
		p, ok := fresh[s.Addr].(node.Persistent)
		if !ok || s.State == nil {
			return nil, fmt.Errorf("cut: node %s is not a persistent server of the layout", s.Addr)
		}
		p.TrackChanges()
		if err := p.Restore(node.Disk(s.State)); err != nil {
			return nil, fmt.Errorf("cut: restoring %s: %v", s.Addr, err)
		}
		nodes[s.Addr] = p
	}
	return nodes, nil
}

// State is the checker's state at the cut (mc.NewStateAt): the restored
// servers, Init'ed as after a restart of every server at the cut, with
// the streams' messages in flight.
func (c *Cut) State() (*mc.State, error) {
	nodes, err := c.Restore()
	if err != nil {
		return nil, err
	}
	var fl []mc.InFlight
	for _, m := range c.InFlight {
		nm, err := m.Decode()
		if err != nil {
			return nil, fmt.Errorf("cut: message %d from %s to %s: %v", m.Seq, m.From, m.To, err)
		}
		fl = append(fl, mc.InFlight{From: m.From, To: m.To, Msg: nm})
	}
	return mc.NewStateAt(nodes, nil, fl), nil
}

// Scenario is the search from the cut: its invariants are the server
// predicates of check (the clients are outside the cut). Init panics if
// the cut does not restore; call State first to get the error.
func (c *Cut) Scenario() *mc.Scenario {
	code, err := erasure.NewCode(c.Layout.G, c.Layout.F)
	if err != nil {
		panic(err)
	}
	return &mc.Scenario{Name: "online", System: "amalgam", Doc: "a cut of running cluster " + c.Cluster,
		Init: func() *mc.State {
			s, err := c.State()
			if err != nil {
				panic(err)
			}
			return s
		},
		Invariants: func() []mc.Predicate {
			return []mc.Predicate{check.ParityConsistency(c.Layout, code), check.CommitInvariant(c.Layout)}
		},
		Describe: check.DescribeNode}
}

// machineOf is the machine index of a server's address.
func machineOf(a node.Addr) (int, error) {
	_, m, err := msg.ParseAddr(a)
	if err != nil {
		return 0, fmt.Errorf("%q is not a server address (role/machine)", a)
	}
	return m, nil
}

// Save writes the cut (gob) to path.
func (c *Cut) Save(path string) error {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(c); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// LoadCut reads a cut written by Save.
func LoadCut(path string) (*Cut, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Cut
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: not a saved cut: %v", path, err)
	}
	return &c, nil
}
