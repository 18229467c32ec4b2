package rspaxos

import (
	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state (node.Persistent, which the paxos core implements): the
// core's records (baselines/paxos/persist.go: each value with this
// member's piece) and the replica's piece of every block a PUT wrote,
// under s/<block, hex>: version, whether the piece is missing, the piece.
// A piece is written when an executed PUT changes it, in the same atomic
// write as the applied prefix that covers it. Not written: the leader's
// GETs being decoded (a restarted replica is a follower; the client
// retries) and the pieces of other members a proposing leader keeps (a
// new leader rebuilds them from phase 1, as after any leader change).

var _ node.Persistent = (*Replica)(nil)

// DecodeValue implements paxos.App (messages.go).
func (a *app) DecodeValue(d *node.Dec) Value { return decodeValue(d) }

// TrackApp implements paxos.App: every piece held counts as changed.
func (a *app) TrackApp() { a.changed = paxos.TrackAll(a.store) }

// PersistApp implements paxos.App: the pieces changed since the last
// call.
func (a *app) PersistApp(w node.Writer) {
	for b := range a.changed {
		st := a.store[b]
		e := node.EncFor(w)
		e.Uint64(st.version)
		e.Bool(st.missing)
		e.Bytes(st.piece)
		w.Put(node.HexKey("s/", b, 16), e.B)
	}
	clear(a.changed)
}

// RestoreApp implements paxos.App: the pieces.
func (a *app) RestoreApp(rd node.Reader) error {
	err := paxos.ScanRecords(rd, "s/", func(b uint64, d *node.Dec) error {
		(*Replica)(a).putStored(b, stored{version: d.Uint64(), missing: d.Bool(), piece: d.Bytes()})
		return nil
	})
	clear(a.changed) // what was just read back is already durable
	return err
}
