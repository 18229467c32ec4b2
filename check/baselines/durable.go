package baselines

import (
	"fmt"

	"github.com/amalgam-store/amalgam/mc"
)

// ChosenDurable holds when every value a member of type R knows is chosen
// is accepted on disk (mc.State.Durable) by a quorum of its group, or was
// discarded there once applied everywhere: what makes a chosen value
// survive any crash. It finds a leader that counts a vote its disk does
// not hold yet (a host sending its accept requests before the acceptance
// is durable) as soon as the slot is chosen.
func ChosenDurable[I comparable, R Replica[I]](quorum int) mc.Predicate {
	return mc.Pred("chosen values durable at a quorum", func(s *mc.State) (bool, string) {
		type key struct {
			g    int
			slot uint64
		}
		chosen := map[key]I{}
		for _, r := range Replicas[R](s) {
			for _, v := range r.Slots() {
				if v.Chosen {
					chosen[key{r.Group(), v.Slot}] = v.Val
				}
			}
		}
		for k, val := range chosen {
			n := 0
			for _, a := range s.Addrs() {
				d, ok := s.Durable(a).(R)
				if !ok || d.Group() != k.g {
					continue
				}
				if d.GC() >= k.slot {
					n++
					continue
				}
				for _, v := range d.Slots() {
					if v.Slot == k.slot && v.Accepted && v.Acc == val {
						n++
						break
					}
				}
			}
			if n < quorum {
				return false, fmt.Sprintf("group %d slot %d: %v is chosen but only %d members hold it on disk (quorum %d)",
					k.g, k.slot, val, n, quorum)
			}
		}
		return true, "every chosen value is on disk at a quorum"
	})
}
