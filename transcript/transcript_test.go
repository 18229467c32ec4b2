package transcript

// Golden transcripts of the commit protocol (thesis 3.3.1, 3.3.3) and the
// replacement protocol (3.3.2): each file in testdata/ is a script of
// commands, each followed by the output it must print. When the protocol
// changes on purpose, regenerate the expected output with
//
//	go test ./transcript/ -rewrite
//
// and review the diff. Commands:
//
//	write client=C block=B data=HEX [offset=O] [seq=S]  a client's write, delivered to its data server
//	read client=C block=B [seq=S]                       a client's read, likewise
//	                                                    (seq: the request number, default the client's next)
//	deliver [from=A] [to=A] [n=K]                the next K messages (default 1) from A to A, with what each receiver did
//	deliver-all [from=A] [to=A]                  every message in flight (or matching), oldest first, until none is left
//	pending                                      the messages in flight, oldest first
//	crash A                                      crash the server at A: its streams end, messages to it are dropped
//	replace A                                    ask the reconfiguration service to replace the server at A
//	tick A                                       fire A's oldest timer
//	state A...                                   what the servers hold
//	check-parity                                 each parity block against the encoding of the data blocks
//	                                             (a mismatch fails the test whatever the expected output)
//
// Messages print as "from -> to" (unordered) or "from => to" (stream).

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		d, err := newDriver()
		if err != nil {
			t.Fatal(err)
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := d.run(t, td)
			if err != nil {
				return "error: " + err.Error()
			}
			return out
		})
	})
}

func (d *driver) run(t *testing.T, td *datadriven.TestData) (string, error) {
	switch td.Cmd {
	case "write", "read":
		var client uint64
		var block, offset int
		td.ScanArgs(t, "client", &client)
		td.ScanArgs(t, "block", &block)
		op := msg.Op{Kind: msg.OpRead, Block: uint64(block)}
		if td.Cmd == "write" {
			var hx string
			td.ScanArgs(t, "data", &hx)
			td.MaybeScanArgs(t, "offset", &offset)
			b, err := hex.DecodeString(hx)
			if err != nil {
				return "", err
			}
			op = msg.Op{Kind: msg.OpWrite, Block: uint64(block), Offset: offset, Data: b}
		}
		if op.Block >= layout.NumBlocks() {
			return "", fmt.Errorf("block %d out of range", block)
		}
		var seq uint64
		if td.MaybeScanArgs(t, "seq", &seq) {
			d.seq[client] = seq - 1 // a retry, or a jump
		}
		return d.request(client, op), nil
	case "deliver":
		from, to := endpoints(t, td)
		n := 1
		td.MaybeScanArgs(t, "n", &n)
		var out []string
		for k := 0; k < n; k++ {
			i := d.net.Next(from, to)
			if i < 0 {
				return "", fmt.Errorf("no message in flight from %q to %q", from, to)
			}
			out = append(out, d.deliver(i))
		}
		return strings.Join(out, "\n"), nil
	case "deliver-all":
		from, to := endpoints(t, td)
		return d.deliverAll(func(e nodetest.Envelope) bool {
			return (from == "" || e.From == from) && (to == "" || e.To == to)
		})
	case "pending":
		var out []string
		for _, e := range d.net.InFlight() {
			out = append(out, envelope(e))
		}
		if len(out) == 0 {
			return "nothing in flight", nil
		}
		return strings.Join(out, "\n"), nil
	case "crash", "replace", "tick", "state":
		var names []string
		for _, a := range td.CmdArgs {
			names = append(names, a.Key)
		}
		addrs, err := d.parseAddrs(names)
		if err != nil {
			return "", err
		}
		return d.each(td.Cmd, addrs)
	case "check-parity":
		out, bad, err := d.checkParity()
		for _, b := range bad {
			// Whatever the expected output says: a parity block must be
			// the encoding of its stripe's data blocks (thesis 2.3, 3.4.1).
			t.Errorf("%s: %s: not the encoding of the stripe's data blocks", td.Pos, b)
		}
		return out, err
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

// each runs a command on every address it names.
func (d *driver) each(cmd string, addrs []node.Addr) (string, error) {
	var out []string
	for _, a := range addrs {
		var s string
		var err error
		switch cmd {
		case "crash":
			d.net.Crash(a)
			s = "crashed " + string(a)
		case "replace":
			s, err = d.replace(a)
		case "tick":
			effs, ok := d.net.Fire(a)
			if !ok {
				return "", fmt.Errorf("%s has no timer set", a)
			}
			s = "fired " + string(a)
			for _, e := range effs {
				s += "\n  " + effect(e)
			}
		case "state":
			s, err = d.state(a)
		}
		if err != nil {
			return "", err
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n"), nil
}

func endpoints(t *testing.T, td *datadriven.TestData) (from, to node.Addr) {
	var f, o string
	td.MaybeScanArgs(t, "from", &f)
	td.MaybeScanArgs(t, "to", &o)
	return node.Addr(f), node.Addr(o)
}
