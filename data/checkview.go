package data

// OpView is a read-only view of one operation in pending_ops, for the
// model checker's invariants and for status pages.
type OpView struct {
	OpNum       uint64
	Client, Seq uint64
	Committed   bool
	Stripes     []int    // stripes the operation touches, in order
	Acks        []uint64 // per stripe: bit i set once Layout.Backups(stripe)[i] acknowledged
}

// Ops lists pending_ops in op number order.
func (s *Server) Ops() []OpView {
	out := make([]OpView, len(s.pending))
	for i, p := range s.pending {
		v := OpView{OpNum: p.opNum, Client: p.client, Seq: p.seq, Committed: p.committed}
		for _, pt := range p.parts {
			v.Stripes = append(v.Stripes, pt.stripe)
			v.Acks = append(v.Acks, pt.acks)
		}
		out[i] = v
	}
	return out
}
