package raftreconfig

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/wire"
)

// stateMachine is what the Raft log replicates: the reconfiguration node
// (reconfig.Service) and the address book beside it. Every replica applies
// the same entries in the same order; only the leader performs the
// node's side effects.
type stateMachine struct {
	svc *reconfig.Service
	dir *wire.Directory
	// timers are the timers the node has set, by hash: a timer entry names
	// one, and every replica runs the same value.
	timers map[uint64]node.Timer
}

// effects collects what a handler of the node did.
type effects struct {
	sends  []sent
	timers []timerSet
}

type sent struct {
	to node.Addr
	m  node.Message
}

type timerSet struct {
	t        node.Timer
	min, max time.Duration
}

func (e *effects) Self() node.Addr                   { return msg.ReconfigAddr }
func (e *effects) Send(to node.Addr, m node.Message) { e.sends = append(e.sends, sent{to, m}) }
func (e *effects) Stream(node.Addr, node.Message) {
	panic("raftreconfig: the reconfiguration node streamed a message; it only sends unordered ones")
}
func (e *effects) SetTimer(t node.Timer, min, max time.Duration) {
	e.timers = append(e.timers, timerSet{t, min, max})
}

// Initial is the state every replica starts from. All replicas of a
// cluster must be started with the same one.
type Initial struct {
	Config     msg.Config
	Hosts      []string // host:port serving machine slot m
	Durability string
}

func (in Initial) fingerprint() []byte {
	return []byte(fmt.Sprintf("%+v|%q|%s", in.Config.Layout, in.Hosts, in.Durability))
}

func newStateMachine(in Initial) (*stateMachine, *effects) {
	sm := &stateMachine{svc: reconfig.New(in.Config), timers: map[uint64]node.Timer{},
		dir: &wire.Directory{Version: 1, Layout: wire.LayoutToProto(in.Config.Layout), Hosts: slices.Clone(in.Hosts),
			Durability: in.Durability, ConfigNum: in.Config.Num}}
	return sm, sm.init()
}

func (sm *stateMachine) init() *effects {
	e := &effects{}
	sm.svc.Init(e)
	sm.note(e)
	return e
}

// note records the timers a handler set.
func (sm *stateMachine) note(e *effects) {
	for _, t := range e.timers {
		sm.timers[node.HashOf(t.t)] = t.t
	}
}

// apply runs one log entry. It returns the node's effects.
func (sm *stateMachine) apply(en *wire.ReconfigEntry) (*effects, error) {
	e := &effects{}
	switch b := en.GetBody().(type) {
	case *wire.ReconfigEntry_Input:
		m, err := wire.MessageFromProto(b.Input.GetMsg())
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", en.GetId(), err)
		}
		sm.svc.Handle(e, node.Addr(b.Input.GetFrom()), m)
	case *wire.ReconfigEntry_Timer:
		t, ok := sm.timers[b.Timer]
		if !ok {
			return nil, fmt.Errorf("entry %d: timer %x was never set", en.GetId(), b.Timer)
		}
		sm.svc.Timer(e, t)
	case *wire.ReconfigEntry_Spare:
		if h := b.Spare; h != "" && !slices.Contains(sm.dir.Hosts, h) && !slices.Contains(sm.dir.Spares, h) {
			sm.dir.Spares = append(sm.dir.Spares, h)
			sm.dir.Version++
		}
	case *wire.ReconfigEntry_Move:
		// A slot moved to a spare has no servers there: the move asks for
		// the replacement of each of them in the same entry.
		mv := reconfig.Move{Machine: int(b.Move.GetMachine()), From: b.Move.GetFrom(), To: b.Move.GetTo()}
		hosts, spares, reqs, ok := reconfig.ApplyMove(sm.dir.Hosts, sm.dir.Spares, sm.svc.Config(), mv)
		if ok {
			sm.dir.Hosts, sm.dir.Spares = hosts, spares
			sm.dir.Version++
			for _, q := range reqs {
				sm.svc.Handle(e, reconfig.FailoverAddr, q)
			}
		}
	}
	sm.note(e)
	sm.dir.ConfigNum = sm.svc.Config().Num
	return e, nil
}

func (sm *stateMachine) snapshot() ([]byte, error) {
	return proto.Marshal(&wire.ReconfigSnapshot{Service: sm.svc.Snapshot(), Directory: sm.dir})
}

func restoreStateMachine(data []byte) (*stateMachine, *effects, error) {
	var s wire.ReconfigSnapshot
	if err := proto.Unmarshal(data, &s); err != nil {
		return nil, nil, err
	}
	svc, err := reconfig.Restore(s.GetService())
	if err != nil {
		return nil, nil, err
	}
	if s.GetDirectory() == nil {
		return nil, nil, fmt.Errorf("snapshot without a directory")
	}
	sm := &stateMachine{svc: svc, dir: s.GetDirectory(), timers: map[uint64]node.Timer{}}
	return sm, sm.init(), nil
}

// resolve maps a server address to the host serving its machine slot.
func resolveIn(dir *wire.Directory, a node.Addr) (string, bool) {
	role, m, err := msg.ParseAddr(a)
	if err != nil || m >= len(dir.GetHosts()) {
		return "", false
	}
	switch role {
	case "data", "parity", "witness":
		return dir.GetHosts()[m], true
	}
	return "", false
}
