package raftreconfig

import (
	"context"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/amalgam-store/amalgam/wire"
)

// peer carries Raft messages to one other replica, in batches, over the
// Reconfig.Raft RPC. Raft tolerates lost messages: a failed batch is
// reported as unreachable and dropped.
type peer struct {
	r    *Replica
	id   uint64
	addr string
	q    chan pb.Message
}

func newPeer(r *Replica, id uint64, addr string) *peer {
	return &peer{r: r, id: id, addr: addr, q: make(chan pb.Message, 4096)}
}

func (p *peer) send(m pb.Message) {
	select {
	case p.q <- m:
	default:
		p.r.rn.ReportUnreachable(p.id) // loop goroutine
	}
}

func (p *peer) run() {
	opts := append(wire.DialOptions(p.r.o.Initial.Config.Layout.BlockSize), grpc.WithTransportCredentials(insecure.NewCredentials()))
	opts = append(opts, p.r.o.DialOptions...)
	cc, err := grpc.NewClient(p.addr, opts...)
	if err != nil {
		p.r.log.Error("raft peer", "addr", p.addr, "err", err)
		return
	}
	defer cc.Close()
	cl := wire.NewReconfigClient(cc)
	for {
		var batch []pb.Message
		select {
		case m := <-p.q:
			batch = append(batch, m)
		case <-p.r.stop:
			return
		}
	more:
		for len(batch) < 256 {
			select {
			case m := <-p.q:
				batch = append(batch, m)
			default:
				break more
			}
		}
		req := &wire.RaftMessages{}
		snaps := false
		for i := range batch {
			b, err := batch[i].Marshal()
			if err != nil {
				continue
			}
			req.Msgs = append(req.Msgs, b)
			snaps = snaps || batch[i].Type == pb.MsgSnap
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cl.Raft(ctx, req)
		cancel()
		id := p.id
		if err != nil {
			p.r.do(func() {
				p.r.rn.ReportUnreachable(id)
				if snaps {
					p.r.rn.ReportSnapshot(id, raft.SnapshotFailure)
				}
			})
			continue
		}
		if snaps {
			p.r.do(func() { p.r.rn.ReportSnapshot(id, raft.SnapshotFinish) })
		}
	}
}
