// Package wiretest fills protocol messages with random values for the wire
// round-trip tests of package wire and of the codecs registered with it.
// It does not import wire, so wire's own tests can use it.
package wiretest

import (
	"math/rand/v2"
	"reflect"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Layout is the layout of the configurations Fill builds.
var Layout = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 8, BlockSize: 16}

// Config is a configuration of Layout with every kind of field changed
// from the initial one.
func Config() msg.Config {
	c := msg.InitialConfig(Layout)
	c.Num = 7
	c.Data[2], c.Parity[4], c.Witness[5] = 3, 2, 9
	c.Changed = msg.DataAddr(2)
	return c
}

// Fill sets every field reachable from v to a random non-zero value that
// its wire form can carry. special, if not nil, is asked first about each
// value and reports whether it set it (for types with a narrow range).
func Fill(rng *rand.Rand, v reflect.Value, special func(reflect.Value) bool) {
	if special != nil && special(v) {
		return
	}
	switch v.Type() {
	case reflect.TypeOf(msg.Config{}):
		c := Config()
		c.Num = rng.Uint64()
		v.Set(reflect.ValueOf(c))
		return
	case reflect.TypeOf(erasure.Role(0)):
		v.SetInt(int64(1 + rng.IntN(3)))
		return
	case reflect.TypeOf(node.Addr("")):
		v.SetString(string(msg.ParityAddr(rng.IntN(6))))
		return
	case reflect.TypeOf(msg.Op{}):
		op := msg.Op{Kind: msg.OpCas, Block: rng.Uint64(), Offset: rng.IntN(100), Length: rng.IntN(100),
			Data: []byte{byte(rng.Uint32()), 1}, Expect: []byte{2}, Delta: rng.Uint64()}
		v.Set(reflect.ValueOf(op))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			Fill(rng, v.Field(i), special)
		}
	case reflect.Int:
		v.SetInt(int64(1 + rng.IntN(1<<20)))
	case reflect.Uint64:
		v.SetUint(1 + rng.Uint64N(1<<63))
	case reflect.Uint8:
		v.SetUint(uint64(rng.UintN(256)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("s")
	case reflect.Slice:
		n := 1 + rng.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			Fill(rng, s.Index(i), special)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		Fill(rng, p.Elem(), special)
		v.Set(p)
	default:
		panic("wiretest: Fill: unhandled kind " + v.Kind().String() + " in " + v.Type().String())
	}
}
