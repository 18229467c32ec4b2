package rspaxos

// Piece returns the replica's piece of block b, the slot of the PUT that
// wrote it (0: never written) and whether the replica holds it (false when
// it learned that PUT without its piece). Callers must not modify it.
func (r *Replica) Piece(b uint64) (piece []byte, version uint64, ok bool) {
	st, found := r.store[b]
	if !found {
		return make([]byte, r.cfg.PieceSize()), 0, true
	}
	return st.piece, st.version, !st.missing
}

// StoredBytes is the number of piece bytes the replica stores.
func (r *Replica) StoredBytes() int {
	n := 0
	for _, st := range r.store {
		n += len(st.piece)
	}
	return n
}

// Reads is the number of GETs the leader is decoding.
func (r *Replica) Reads() int { return len(r.reads) }
