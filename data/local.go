package data

import (
	"fmt"

	"github.com/amalgam-store/amalgam/msg"
)

// CheckStep is the data server's node-local invariant, for the runtime's
// immediate safety check: a step from before to after commits only
// operations whose every stripe has f acknowledgements (with the data
// server, f+1 holders of the delta), and commits in op order (no
// committed operation follows an uncommitted one in pending_ops).
func CheckStep(before, after *Server) error {
	was := map[uint64]bool{}
	for _, p := range before.pending {
		was[p.opNum] = p.committed
	}
	// An uncommitted operation that left pending_ops committed in this
	// step: it is dropped as soon as every parity server acknowledged it.
	in := map[uint64]bool{}
	for _, p := range after.pending {
		in[p.opNum] = true
	}
	var gone uint64 // the last operation committed and dropped in this step
	for _, p := range before.pending {
		if !p.committed && !in[p.opNum] {
			gone = p.opNum
		}
	}
	f := after.cfg.Layout.F
	var open uint64 // the first uncommitted op, 0: none yet
	for _, p := range after.pending {
		if !p.committed {
			if open == 0 {
				open = p.opNum
			}
			if p.opNum < gone {
				return fmt.Errorf("%s commits op %d before op %d", msg.DataAddr(after.me), gone, p.opNum)
			}
			continue
		}
		if open != 0 {
			return fmt.Errorf("%s commits op %d before op %d", msg.DataAddr(after.me), p.opNum, open)
		}
		if was[p.opNum] {
			continue
		}
		for _, pt := range p.parts {
			if n := popcount(pt.acks); n < f {
				return fmt.Errorf("%s commits op %d with %d of %d acknowledgements on stripe %d", msg.DataAddr(after.me), p.opNum, n, f, pt.stripe)
			}
		}
	}
	return nil
}
