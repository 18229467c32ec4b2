package wire

import (
	"fmt"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Conversions of the reconfiguration and stripe snapshot messages
// (msg/reconfig.go). MessageToProto and MessageFromProto call them.

func reconfigToProto(m node.Message) (*Message, bool) {
	switch m := m.(type) {
	case msg.Replace:
		return &Message{Body: &Message_Replace{Replace: ReplaceToProto(m)}}, true
	case msg.StopShard:
		return &Message{Body: &Message_StopShard{StopShard: &StopShard{Num: m.Num, Shard: int32(m.Shard), Primary: m.Primary}}}, true
	case msg.StopShardOK:
		return &Message{Body: &Message_StopShardOk{StopShardOk: &StopShardOK{Num: m.Num, Shard: int32(m.Shard), OpNum: m.OpNum,
			Prepares: preparesToProto(m.Prepares), Clients: clientsToProto(m.Clients)}}}, true
	case msg.StopBackup:
		return &Message{Body: &Message_StopBackup{StopBackup: &StopBackup{Num: m.Num, Role: int32(m.Role), Machine: int32(m.Machine), Inc: m.Inc}}}, true
	case msg.StopBackupOK:
		return &Message{Body: &Message_StopBackupOk{StopBackupOk: &StopBackupOK{Num: m.Num, Role: int32(m.Role), Machine: int32(m.Machine)}}}, true
	case msg.NewConfig:
		p := &NewConfig{Config: ConfigToProto(m.Config)}
		if in := m.Install; in != nil {
			p.Install = &Install{Shard: int32(in.Shard), Upto: in.Upto, Chain: preparesToProto(in.Chain), Clients: clientsToProto(in.Clients)}
		}
		return &Message{Body: &Message_NewConfig{NewConfig: p}}, true
	case msg.ConfigOK:
		return &Message{Body: &Message_ConfigOk{ConfigOk: &ConfigOK{Num: m.Num}}}, true
	case msg.Resending:
		p := &Resending{Num: m.Num, Shard: int32(m.Shard)}
		for _, a := range m.Backups {
			p.Backups = append(p.Backups, string(a))
		}
		return &Message{Body: &Message_Resending{Resending: p}}, true
	case msg.Rebuilt:
		return &Message{Body: &Message_Rebuilt{Rebuilt: &Rebuilt{Role: int32(m.Role), Machine: int32(m.Machine), Inc: m.Inc}}}, true
	case msg.RebuiltOK:
		return &Message{Body: &Message_RebuiltOk{RebuiltOk: &RebuiltOK{Role: int32(m.Role), Machine: int32(m.Machine), Inc: m.Inc}}}, true
	case msg.StripeSnapshot:
		return &Message{Body: &Message_StripeSnapshot{StripeSnapshot: &StripeSnapshot{Num: m.Num, Stripe: int32(m.Stripe), Nonce: m.Nonce,
			Requester: string(m.Requester), Count: int32(m.Count)}}}, true
	case msg.SnapshotMarker:
		return &Message{Body: &Message_SnapshotMarker{SnapshotMarker: &SnapshotMarker{Num: m.Num, Stripe: int32(m.Stripe), Nonce: m.Nonce,
			Requester: string(m.Requester), Shard: int32(m.Shard), Count: int32(m.Count)}}}, true
	case msg.SnapshotData:
		return &Message{Body: &Message_SnapshotData{SnapshotData: &SnapshotData{Num: m.Num, Stripe: int32(m.Stripe), Nonce: m.Nonce,
			Shard: int32(m.Shard), Block: m.Block, HasBlock: m.Block != nil, OpNum: m.OpNum, Primary: m.Primary, Rest: runBlocks(m.Rest)}}}, true
	case msg.SnapshotParity:
		return &Message{Body: &Message_SnapshotParity{SnapshotParity: &SnapshotParity{Num: m.Num, Stripe: int32(m.Stripe), Nonce: m.Nonce,
			Index: int32(m.Index), Block: m.Block, HasBlock: m.Block != nil, Rest: runBlocks(m.Rest)}}}, true
	}
	return nil, false
}

// reconfigFromProto decodes the reconfiguration bodies of p; ok is false
// for other bodies.
func reconfigFromProto(p *Message) (m node.Message, ok bool, err error) {
	switch b := p.GetBody().(type) {
	case *Message_Replace:
		r, err := ReplaceFromProto(b.Replace)
		return r, true, err
	case *Message_StopShard:
		q := b.StopShard
		return msg.StopShard{Num: q.GetNum(), Shard: int(q.GetShard()), Primary: q.GetPrimary()}, true, nil
	case *Message_StopShardOk:
		q := b.StopShardOk
		ps, err := preparesFromProto(q.GetPrepares(), "stop_shard_ok.prepares")
		if err != nil {
			return nil, true, err
		}
		return msg.StopShardOK{Num: q.GetNum(), Shard: int(q.GetShard()), OpNum: q.GetOpNum(), Prepares: ps,
			Clients: clientsFromProto(q.GetClients())}, true, nil
	case *Message_StopBackup:
		q := b.StopBackup
		role, err := roleFromProto(q.GetRole(), "stop_backup.role")
		return msg.StopBackup{Num: q.GetNum(), Role: role, Machine: int(q.GetMachine()), Inc: q.GetInc()}, true, err
	case *Message_StopBackupOk:
		q := b.StopBackupOk
		role, err := roleFromProto(q.GetRole(), "stop_backup_ok.role")
		return msg.StopBackupOK{Num: q.GetNum(), Role: role, Machine: int(q.GetMachine())}, true, err
	case *Message_NewConfig:
		q := b.NewConfig
		cfg, err := ConfigFromProto(q.GetConfig(), "new_config.config")
		if err != nil {
			return nil, true, err
		}
		nc := msg.NewConfig{Config: cfg}
		if in := q.GetInstall(); in != nil {
			chain, err := preparesFromProto(in.GetChain(), "new_config.install.chain")
			if err != nil {
				return nil, true, err
			}
			nc.Install = &msg.Install{Shard: int(in.GetShard()), Upto: in.GetUpto(), Chain: chain, Clients: clientsFromProto(in.GetClients())}
		}
		return nc, true, nil
	case *Message_ConfigOk:
		return msg.ConfigOK{Num: b.ConfigOk.GetNum()}, true, nil
	case *Message_Resending:
		q := b.Resending
		r := msg.Resending{Num: q.GetNum(), Shard: int(q.GetShard())}
		for _, a := range q.GetBackups() {
			r.Backups = append(r.Backups, node.Addr(a))
		}
		return r, true, nil
	case *Message_Rebuilt:
		q := b.Rebuilt
		role, err := roleFromProto(q.GetRole(), "rebuilt.role")
		return msg.Rebuilt{Role: role, Machine: int(q.GetMachine()), Inc: q.GetInc()}, true, err
	case *Message_RebuiltOk:
		q := b.RebuiltOk
		role, err := roleFromProto(q.GetRole(), "rebuilt_ok.role")
		return msg.RebuiltOK{Role: role, Machine: int(q.GetMachine()), Inc: q.GetInc()}, true, err
	case *Message_StripeSnapshot:
		q := b.StripeSnapshot
		return msg.StripeSnapshot{Num: q.GetNum(), Stripe: int(q.GetStripe()), Nonce: q.GetNonce(), Requester: node.Addr(q.GetRequester()),
			Count: int(q.GetCount())}, true, nil
	case *Message_SnapshotMarker:
		q := b.SnapshotMarker
		return msg.SnapshotMarker{Num: q.GetNum(), Stripe: int(q.GetStripe()), Nonce: q.GetNonce(), Requester: node.Addr(q.GetRequester()),
			Shard: int(q.GetShard()), Count: int(q.GetCount())}, true, nil
	case *Message_SnapshotData:
		q := b.SnapshotData
		return msg.SnapshotData{Num: q.GetNum(), Stripe: int(q.GetStripe()), Nonce: q.GetNonce(), Shard: int(q.GetShard()),
			Block: OptBytes(q.GetBlock(), q.GetHasBlock()), OpNum: q.GetOpNum(), Primary: q.GetPrimary(), Rest: runBlocksFrom(q.GetRest())}, true, nil
	case *Message_SnapshotParity:
		q := b.SnapshotParity
		return msg.SnapshotParity{Num: q.GetNum(), Stripe: int(q.GetStripe()), Nonce: q.GetNonce(), Index: int(q.GetIndex()),
			Block: OptBytes(q.GetBlock(), q.GetHasBlock()), Rest: runBlocksFrom(q.GetRest())}, true, nil
	}
	return nil, false, nil
}

// runBlocks is a snapshot run's later blocks on the wire.
func runBlocks(rest [][]byte) []*RunBlock {
	var out []*RunBlock
	for _, b := range rest {
		out = append(out, &RunBlock{Block: b, HasBlock: b != nil})
	}
	return out
}

// runBlocksFrom is a snapshot run's later blocks (nil when there are none).
func runBlocksFrom(rest []*RunBlock) [][]byte {
	var out [][]byte
	for _, b := range rest {
		out = append(out, OptBytes(b.GetBlock(), b.GetHasBlock()))
	}
	return out
}

// OptBytes keeps nil (absent) apart from empty (present, no bytes): the
// decoded value of a bytes field that has a has_ flag beside it.
func OptBytes(b []byte, has bool) []byte {
	if !has {
		return nil
	}
	if b == nil {
		return []byte{}
	}
	return b
}

// ReplaceToProto converts a replacement request.
func ReplaceToProto(m msg.Replace) *Replace {
	return &Replace{Role: int32(m.Role), Machine: int32(m.Machine), Inc: m.Inc}
}

// ReplaceFromProto converts a replacement request back.
func ReplaceFromProto(q *Replace) (msg.Replace, error) {
	role, err := roleFromProto(q.GetRole(), "replace.role")
	return msg.Replace{Role: role, Machine: int(q.GetMachine()), Inc: q.GetInc()}, err
}

func roleFromProto(r int32, field string) (erasure.Role, error) {
	if r < int32(erasure.RoleData) || r > int32(erasure.RoleWitness) {
		return 0, fieldErr(field, "unknown role %d", r)
	}
	return erasure.Role(r), nil
}

// LayoutToProto converts a layout.
func LayoutToProto(l erasure.Layout) *Layout {
	return &Layout{N: int32(l.N), G: int32(l.G), F: int32(l.F), W: int32(l.W), Stripes: int32(l.Stripes), BlockSize: int32(l.BlockSize)}
}

// ConfigToProto converts a configuration.
func ConfigToProto(c msg.Config) *Config {
	return &Config{Num: c.Num, Layout: LayoutToProto(c.Layout), Data: c.Data, Parity: c.Parity, Witness: c.Witness,
		Changed: string(c.Changed)}
}

// ConfigFromProto converts a configuration back and checks that it is
// well formed: a valid layout and an incarnation for every server.
func ConfigFromProto(q *Config, field string) (msg.Config, error) {
	if q == nil {
		return msg.Config{}, fieldErr(field, "missing")
	}
	lp := q.GetLayout()
	l := erasure.Layout{N: int(lp.GetN()), G: int(lp.GetG()), F: int(lp.GetF()), W: int(lp.GetW()),
		Stripes: int(lp.GetStripes()), BlockSize: int(lp.GetBlockSize())}
	if err := l.Validate(); err != nil {
		return msg.Config{}, fieldErr(field+".layout", "%v", err)
	}
	for name, xs := range map[string][]uint64{"data": q.GetData(), "parity": q.GetParity(), "witness": q.GetWitness()} {
		if len(xs) != l.N {
			return msg.Config{}, fieldErr(field+"."+name, "%d incarnations for %d machines", len(xs), l.N)
		}
	}
	c := msg.Config{Num: q.GetNum(), Layout: l, Data: q.GetData(), Parity: q.GetParity(), Witness: q.GetWitness(),
		Changed: node.Addr(q.GetChanged())}
	if c.Changed != "" {
		if _, m, err := msg.ParseAddr(c.Changed); err != nil || m >= l.N {
			return msg.Config{}, fieldErr(field+".changed", "bad server %q", c.Changed)
		}
	}
	return c, nil
}

func preparesToProto(ps []msg.Prepare) []*Prepare { return convert(ps, prepareToProto) }

func preparesFromProto(qs []*Prepare, field string) ([]msg.Prepare, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	out := make([]msg.Prepare, len(qs))
	for i, q := range qs {
		if q == nil {
			return nil, fieldErr(fmt.Sprintf("%s[%d]", field, i), "missing")
		}
		out[i] = prepareFromProto(q)
	}
	return out, nil
}

func clientsToProto(cs []msg.ClientRecord) []*ClientRecord {
	return convert(cs, func(c msg.ClientRecord) *ClientRecord {
		return &ClientRecord{Client: c.Client, Seq: c.Seq, Reply: replyToProto(c.Reply)}
	})
}

func clientsFromProto(qs []*ClientRecord) []msg.ClientRecord {
	if len(qs) == 0 {
		return nil
	}
	out := make([]msg.ClientRecord, len(qs))
	for i, q := range qs {
		out[i] = msg.ClientRecord{Client: q.GetClient(), Seq: q.GetSeq(), Reply: replyFromProto(q.GetReply())}
	}
	return out
}
