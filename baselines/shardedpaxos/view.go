package shardedpaxos

// Block returns the replica's copy of block b (zeros if never written).
// Callers must not modify it. Witnesses hold no blocks and return nil.
func (r *Replica) Block(b uint64) []byte {
	if !r.Full() {
		return nil
	}
	return r.blocks.get(b)
}

// StoredBytes is the number of block bytes the replica stores.
func (r *Replica) StoredBytes() int {
	n := 0
	for _, v := range r.blocks.m {
		n += len(v)
	}
	return n
}
