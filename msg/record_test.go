package msg

import (
	"reflect"
	"testing"

	"github.com/amalgam-store/amalgam/node"
)

func TestPrepareRecordRoundTrip(t *testing.T) {
	reply := Reply{Seq: 9, Outcome: Outcome{Results: []Result{{Data: []byte("old"), Value: 3, OK: true}, {Data: []byte{}}}}, Err: "e"}
	for _, p := range []Prepare{
		{},
		{Shard: 2, Primary: 7, OpNum: 1 << 40, Stripe: -1, Pos: 1, Delta: []byte{1, 2, 3}, Stripes: []int{4, 5}, Client: 11, Seq: 12, Reply: &reply},
		{Delta: []byte{}, Reply: &Reply{}},
	} {
		var e node.Enc
		p.Encode(&e)
		d := node.NewDec(e.B)
		got := DecodePrepare(d)
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("decoded %+v, want %+v", got, p)
		}
		for n := range len(e.B) {
			d := node.NewDec(e.B[:n])
			DecodePrepare(d)
			if d.Err() == nil {
				t.Errorf("a record cut to %d of %d bytes decodes", n, len(e.B))
			}
		}
	}
}
