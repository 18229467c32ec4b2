package reconfig

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Snapshots of the service's state, for the Raft host in production
// (runtime/raftreconfig): it compacts its log by storing the state at an
// index. Restore(Snapshot()) hashes equal to the original.

type snapState struct {
	History  []snapEntry
	Acked    map[node.Addr]uint64
	Queue    []msg.Replace
	HasOp    bool
	Op       snapOp
	Fresh    []fresh
	Degraded []node.Addr
}

type snapEntry struct {
	Cfg        msg.Config
	HasInstall bool // gob drops a pointer to a zero value: keep presence apart
	Install    msg.Install
}

type snapOp struct {
	Req     msg.Replace
	Num     uint64
	Targets []node.Addr
	Shards  []snapShard
	Backups []node.Addr
}

type snapShard struct {
	From node.Addr
	OK   msg.StopShardOK
}

// Snapshot encodes the service's state.
func (s *Service) Snapshot() []byte {
	st := snapState{Acked: s.acked, Queue: s.queue, Fresh: s.fresh, Degraded: s.degraded}
	for _, e := range s.history {
		se := snapEntry{Cfg: e.cfg}
		if e.install != nil {
			se.HasInstall, se.Install = true, *e.install
		}
		st.History = append(st.History, se)
	}
	if op := s.op; op != nil {
		st.HasOp = true
		st.Op = snapOp{Req: op.req, Num: op.num, Targets: op.targets}
		for _, a := range op.targets {
			if r, ok := op.shards[a]; ok {
				st.Op.Shards = append(st.Op.Shards, snapShard{a, r})
			}
			if op.backups[a] {
				st.Op.Backups = append(st.Op.Backups, a)
			}
		}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(st); err != nil {
		panic(fmt.Sprintf("reconfig: encoding a snapshot: %v", err)) // fixed, encodable types only
	}
	return b.Bytes()
}

// Restore rebuilds a service from a Snapshot.
func Restore(b []byte) (*Service, error) {
	var st snapState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
		return nil, fmt.Errorf("reconfig: decoding a snapshot: %w", err)
	}
	if len(st.History) == 0 {
		return nil, fmt.Errorf("reconfig: snapshot without configurations")
	}
	s := &Service{acked: map[node.Addr]uint64{}, queue: st.Queue, fresh: st.Fresh, degraded: st.Degraded}
	for a, n := range st.Acked {
		s.acked[a] = n
	}
	for _, e := range st.History {
		en := entry{cfg: e.Cfg}
		if e.HasInstall {
			in := e.Install
			en.install = &in
		}
		s.history = append(s.history, en)
	}
	if st.HasOp {
		op := &operation{req: st.Op.Req, num: st.Op.Num, targets: st.Op.Targets}
		if op.req.Role == erasure.RoleData {
			op.shards = map[node.Addr]msg.StopShardOK{}
			for _, r := range st.Op.Shards {
				op.shards[r.From] = r.OK
			}
		} else {
			op.backups = map[node.Addr]bool{}
			for _, a := range st.Op.Backups {
				op.backups[a] = true
			}
		}
		if !slices.IsSorted(op.targets) {
			return nil, fmt.Errorf("reconfig: snapshot with unsorted targets")
		}
		s.op = op
	}
	return s, nil
}
