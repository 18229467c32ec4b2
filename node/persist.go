package node

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// Persistent is implemented by nodes whose state the production runtime
// makes durable. The checker restarts crashed nodes through it (mc's
// State.Restartable).
//
// The runtime calls TrackChanges once, after New (or Restore), and then
// Persist after every batch of handler calls: Persist writes what changed
// since the previous call (the first call writes everything). Restore
// rebuilds the state from what Persist wrote. Keys are private to the node
// (the runtime prefixes them with the node's address).
//
// Durable before released: a host commits a batch's Persist writes, in one
// atomic write, before any effect of the batch (a message sent or
// streamed, a stream message acknowledged, a timer set) leaves the node. So a node
// restarted through Restore is in a state that explains everything it
// released. The runtime's batch step (runtime/batch.go) is collect,
// persist, release.
type Persistent interface {
	Node
	TrackChanges()
	Persist(w Writer)
	Restore(r Reader) error
}

// Unhurried is implemented by stream messages that nothing waits for
// (for example a COMMIT, sent after the reply it follows). A batch whose
// only effects are unhurried stream messages and the acknowledgement of
// the stream messages it handled does not force a sync: a host writes it
// unsynced and releases its effects once a later sync has made it durable
// (the next batch that must be synced, or a background sync). Durable
// before released still holds; only when does not.
type Unhurried interface {
	Message
	Unhurried()
}

// EarlySends is implemented by stream messages whose handler's unordered
// messages may leave before the batch is durable: a crash that loses the
// batch also loses its acknowledgement of the message, so the message is
// delivered again after the restart and the handler, in the state the
// batch started from, sends the same. A host may then release a batch
// that handled only such messages, streams only Unhurried ones, sets no
// timer and changes no incarnation, as it does a lazy one, except that its
// unordered messages leave at once (runtime/lazysync.go). The model
// checker checks a kind with mc.State.SendsBeforeDurableOn.
type EarlySends interface {
	Message
	EarlySends()
}

// EarlySender is implemented by nodes some of whose unordered messages
// may leave before the batch that sends them is durable (a Multi-Paxos
// leader's accept requests): SendsEarly reports it for one message the
// node sends. A host sends those at once, in the order of the node's
// batches, and holds everything else the batch produced until it is
// durable (runtime/lazysync.go, sends ahead). A crash may then lose a
// suffix of the node's batches whose early messages have left; the node
// must be safe when it restarts from the state before them. The model
// checker checks a node with mc.State.LagOn.
type EarlySender interface {
	Node
	SendsEarly(m Message) bool
}

// Backer is implemented by persisted nodes whose own records hold some of
// the stream messages they send (a data server's pending operation holds
// its PREPAREs). A host may then store such a message once: in the node's
// record, with only a reference to it in the outgoing stream's log.
//
// Backing is asked, after a batch's handlers ran, about a message the
// batch streamed: if the record that the batch's Persist leaves under key
// holds m as its message i, it returns them. Backed returns message i of
// the record under key, in a node restored from what Persist wrote (false
// if there is none). While a stream may still need the message, the host
// keeps its own copy of it if the node rewrites or deletes the record.
type Backer interface {
	Persistent
	Backing(m Message) (key string, i int, ok bool)
	Backed(key string, i int) (Message, bool)
}

// Writer receives a node's durable changes. Values are copied before Put
// returns.
type Writer interface {
	Put(key string, value []byte)
	Delete(key string)
}

// LinkPrefix starts every key a node links (Linker).
const LinkPrefix = "l/"

// Linker is a Writer that can store a value a second time without copying
// it. Link makes dst (a key under LinkPrefix) hold the value src holds at
// this point of the writes, and reports whether it did: a store links only
// what it keeps apart from its log (the runtime: blocks in block files),
// and otherwise leaves dst alone. Linking an absent src makes dst absent.
// Later writes of src do not change dst; only Delete(dst) removes it. A
// node writes keys under LinkPrefix only through Link.
type Linker interface {
	Writer
	Link(dst, src string) bool
}

// PutOrDelete puts under key what enc encodes if present, else deletes key.
func PutOrDelete(w Writer, key string, present bool, enc func(*Enc)) {
	if !present {
		w.Delete(key)
		return
	}
	b := EncFor(w)
	enc(b)
	w.Put(key, b.B)
}

// Reader reads back what a node persisted.
type Reader interface {
	// Get returns the value stored under key, if any.
	Get(key string) ([]byte, bool, error)
	// Scan calls fn for every key with the prefix, in key order. The value
	// is only valid during the call.
	Scan(prefix string, fn func(key string, value []byte) error) error
}

// GobBytes encodes v with encoding/gob, for the small metadata records
// nodes persist. Only fixed, encodable types may be passed.
func GobBytes(v any) []byte {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		panic(fmt.Sprintf("gob encoding %T: %v", v, err))
	}
	return b.Bytes()
}

// GobDecode decodes a record written by GobBytes into v.
func GobDecode(b []byte, v any) error { return gob.NewDecoder(bytes.NewReader(b)).Decode(v) }
