package raftreconfig

import (
	"context"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/wire"
)

// api serves the Reconfig service.
type api struct {
	wire.UnimplementedReconfigServer
	r *Replica
}

// Raft takes messages from the other replicas.
func (a *api) Raft(_ context.Context, req *wire.RaftMessages) (*wire.RaftAck, error) {
	for _, b := range req.GetMsgs() {
		var m pb.Message
		if err := m.Unmarshal(b); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "msgs: %v", err)
		}
		if !a.r.do(func() { _ = a.r.rn.Step(m) }) {
			return nil, status.Error(codes.Unavailable, "replica stopped")
		}
	}
	return &wire.RaftAck{}, nil
}

// Heartbeat notes that a machine or spare is alive (at the leader) and
// returns the address book.
func (a *api) Heartbeat(_ context.Context, req *wire.HeartbeatRequest) (*wire.HeartbeatResponse, error) {
	r := a.r
	host, m := req.GetHost(), int(req.GetMachine())
	if host == "" {
		return nil, status.Error(codes.InvalidArgument, "host: empty")
	}
	r.do(func() { r.toFailover(reconfig.Heartbeat{Host: host, Machine: m}) })
	p := r.pub.Load()
	return &wire.HeartbeatResponse{Directory: p.dir, Leader: p.leader, LeaderAddr: p.leaderAddr}, nil
}

func notLeader(p *published) error {
	if p.leaderAddr == "" {
		return status.Error(codes.Unavailable, "no leader elected yet; retry")
	}
	return status.Errorf(codes.FailedPrecondition, "not the leader; the leader is at %s", p.leaderAddr)
}

// Replace asks for a replacement (amalgam-cli admin replace).
func (a *api) Replace(ctx context.Context, req *wire.AdminReplaceRequest) (*wire.AdminReplaceResponse, error) {
	r := a.r
	p := r.pub.Load()
	if !p.leader {
		return nil, notLeader(p)
	}
	role, m, err := msg.ParseAddr(node.Addr(req.GetServer()))
	l := p.history[len(p.history)-1].Layout
	if err != nil || m >= l.N {
		return nil, status.Errorf(codes.InvalidArgument, "server: %q is not data/N, parity/N, witness/N or machine/N with N below %d", req.GetServer(), l.N)
	}
	var roles []erasure.Role
	switch role {
	case "data":
		roles = []erasure.Role{erasure.RoleData}
	case "parity":
		roles = []erasure.Role{erasure.RoleParity}
	case "witness":
		if l.W == 0 {
			return nil, status.Error(codes.InvalidArgument, "server: the layout has no witnesses")
		}
		roles = []erasure.Role{erasure.RoleWitness}
	case "machine":
		roles = []erasure.Role{erasure.RoleData, erasure.RoleParity}
		if l.W > 0 {
			roles = append(roles, erasure.RoleWitness)
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "server: unknown role %q", role)
	}
	if req.GetToSpare() {
		if err := r.moveToSpare(ctx, m, ""); err != nil {
			return nil, proposalStatus(err)
		}
	}
	reqs, err := r.replaceRoles(ctx, m, roles)
	if err != nil {
		return nil, proposalStatus(err)
	}
	out := &wire.AdminReplaceResponse{Host: r.pub.Load().dir.GetHosts()[m]}
	for _, q := range reqs {
		out.Requested = append(out.Requested, wire.ReplaceToProto(q))
	}
	// Read on the loop goroutine, which has applied the requests.
	ch := make(chan []msg.Replace, 1)
	if r.do(func() { ch <- r.sm.svc.Postponed() }) {
		for _, q := range <-ch {
			if slices.Contains(reqs, q) {
				out.Postponed = append(out.Postponed, wire.ReplaceToProto(q))
			}
		}
	}
	return out, nil
}

func proposalStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case err == errNotLeader:
		return status.Error(codes.Unavailable, "leadership moved while proposing; retry")
	case err == context.DeadlineExceeded || err == context.Canceled:
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

// replaceRoles proposes the replacement of the current incarnation of
// every role on machine m, in order (data first: it pre-empts the others
// anyway), and waits until the service has them.
func (r *Replica) replaceRoles(ctx context.Context, m int, roles []erasure.Role) ([]msg.Replace, error) {
	cfg := r.Config()
	var out []msg.Replace
	for _, role := range roles {
		inc := map[erasure.Role][]uint64{erasure.RoleData: cfg.Data, erasure.RoleParity: cfg.Parity, erasure.RoleWitness: cfg.Witness}[role][m]
		q := msg.Replace{Role: role, Machine: m, Inc: inc}
		p, err := wire.MessageToProto(q)
		if err != nil {
			return nil, err
		}
		en := &wire.ReconfigEntry{Body: &wire.ReconfigEntry_Input{Input: &wire.Envelope{From: "operator", To: string(msg.ReconfigAddr), Msg: p}}}
		if err := r.propose(ctx, en); err != nil {
			return out, err
		}
		out = append(out, q)
	}
	return out, nil
}

// moveToSpare moves machine slot m to a live spare (the given one, or any)
// and waits until the move applies.
func (r *Replica) moveToSpare(ctx context.Context, m int, spare string) error {
	type pick struct {
		from, to string
		err      error
	}
	ch := make(chan pick, 1)
	if !r.do(func() {
		dir := r.sm.dir
		if m >= len(dir.GetHosts()) {
			ch <- pick{err: status.Errorf(codes.InvalidArgument, "no machine %d", m)}
			return
		}
		to := spare
		if to == "" && r.fo != nil {
			to = r.fo.LiveSpare()
		}
		if to == "" {
			ch <- pick{err: status.Error(codes.FailedPrecondition, "no live spare: start one with amalgam-server node --spare")}
			return
		}
		ch <- pick{from: dir.GetHosts()[m], to: to}
	}) {
		return fmt.Errorf("replica stopped")
	}
	pk := <-ch
	if pk.err != nil {
		return pk.err
	}
	r.log.Info("moving machine slot to a spare", "machine", m, "from", pk.from, "to", pk.to)
	err := r.propose(ctx, &wire.ReconfigEntry{Body: &wire.ReconfigEntry_Move{Move: &wire.SlotMove{Machine: int32(m), From: pk.from, To: pk.to}}})
	if err != nil {
		return err
	}
	if got := r.Directory().GetHosts()[m]; got != pk.to {
		return status.Errorf(codes.Aborted, "machine %d is served by %s, not the spare %s (the spare left?)", m, got, pk.to)
	}
	return nil
}

// History returns every configuration (amalgam-cli admin config).
func (a *api) History(context.Context, *wire.HistoryRequest) (*wire.HistoryResponse, error) {
	p := a.r.pub.Load()
	out := &wire.HistoryResponse{Directory: p.dir, Busy: p.busy, LeaderAddr: p.leaderAddr}
	for _, q := range p.postponed {
		out.Postponed = append(out.Postponed, wire.ReplaceToProto(q))
	}
	for _, a := range p.degraded {
		out.Degraded = append(out.Degraded, string(a))
	}
	if p.leader {
		out.LeaderAddr = a.r.o.Peers[a.r.o.ID]
	}
	for _, c := range p.history {
		out.Configs = append(out.Configs, wire.ConfigToProto(c))
	}
	return out, nil
}

// clientAPI serves the client API's Status at the replica: the newest
// configuration and where each machine slot is served.
type clientAPI struct {
	wire.UnimplementedClientServer
	r *Replica
}

func (c *clientAPI) Status(context.Context, *wire.StatusRequest) (*wire.StatusResponse, error) {
	p := c.r.pub.Load()
	cfg := p.history[len(p.history)-1]
	out := &wire.StatusResponse{ConfigNum: cfg.Num, Layout: p.dir.GetLayout(), Durability: p.dir.GetDurability(), Spares: p.dir.GetSpares()}
	if p.leader {
		for _, m := range p.suspected {
			out.Suspected = append(out.Suspected, int32(m))
		}
	} else {
		out.ReconfigLeader = p.leaderAddr
	}
	for m, h := range p.dir.GetHosts() {
		out.Machines = append(out.Machines, &wire.Machine{Index: int32(m), Addr: h, DataIncarnation: cfg.Data[m],
			ParityIncarnation: cfg.Parity[m], WitnessIncarnation: cfg.Witness[m]})
	}
	return out, nil
}

func (c *clientAPI) Execute(context.Context, *wire.ExecuteRequest) (*wire.ExecuteResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "this is the reconfiguration service: send operations to the data server of the block's shard (see Status)")
}
