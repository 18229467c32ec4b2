// Package erasure holds the stripe layout and the Reed-Solomon code that
// Amalgam's data and parity servers share.
package erasure

import "fmt"

// Layout places stripes on machines. Every machine hosts one data, one
// parity and one witness server. Stripe s gives role index j to machine
// (j - s) mod N, with roles 0..G-1 data positions, G..G+F-1 parity indices
// and G+F..G+F+W-1 witnesses (thesis figure 3.4). A machine thus plays at
// most one role per stripe, and over any N consecutive stripes each machine
// plays every role exactly once.
type Layout struct {
	N, G, F, W int
	Stripes    int // number of stripes
	BlockSize  int // bytes per block
}

// Role is what a machine is for one stripe.
type Role int

// The roles a machine may play in a stripe.
const (
	RoleNone Role = iota
	RoleData
	RoleParity
	RoleWitness
)

// Validate reports the first problem with the layout's parameters.
func (l Layout) Validate() error {
	switch {
	case l.G < 1:
		return fmt.Errorf("g must be at least 1, got %d", l.G)
	case l.F < 1:
		return fmt.Errorf("f must be at least 1, got %d", l.F)
	case l.W < 0:
		return fmt.Errorf("w must not be negative, got %d", l.W)
	case l.G+l.F > 256:
		return fmt.Errorf("g+f must be at most 256, got %d", l.G+l.F)
	case l.F+l.W > 64:
		return fmt.Errorf("f+w must be at most 64 (acknowledgements are tracked in a 64-bit mask), got %d", l.F+l.W)
	case l.N < l.G+l.F+l.W:
		return fmt.Errorf("need at least g+f+w=%d machines, got %d", l.G+l.F+l.W, l.N)
	case l.Stripes < 1:
		return fmt.Errorf("stripes must be at least 1, got %d", l.Stripes)
	case l.BlockSize < 1:
		return fmt.Errorf("block size must be at least 1, got %d", l.BlockSize)
	}
	return nil
}

// NumBlocks is the number of addressable data blocks.
func (l Layout) NumBlocks() uint64 { return uint64(l.Stripes) * uint64(l.G) }

// machine returns the machine with role index j in stripe s.
func (l Layout) machine(s, j int) int { return ((j-s)%l.N + l.N) % l.N }

// roleIndex returns machine m's role index in stripe s.
func (l Layout) roleIndex(s, m int) int { return (m + s) % l.N }

// Locate maps a global block number to its stripe and data position.
func (l Layout) Locate(block uint64) (stripe, pos int) {
	return int(block / uint64(l.G)), int(block % uint64(l.G))
}

// Block is the global block number at (stripe, data position).
func (l Layout) Block(stripe, pos int) uint64 { return uint64(stripe)*uint64(l.G) + uint64(pos) }

// Shard is the machine whose data server owns block.
func (l Layout) Shard(block uint64) int {
	s, p := l.Locate(block)
	return l.DataMachine(s, p)
}

// DataMachine is the machine holding data position pos of stripe s.
func (l Layout) DataMachine(s, pos int) int { return l.machine(s, pos) }

// ParityMachine is the machine holding parity block k of stripe s.
func (l Layout) ParityMachine(s, k int) int { return l.machine(s, l.G+k) }

// WitnessMachine is the machine acting as witness k of stripe s.
func (l Layout) WitnessMachine(s, k int) int { return l.machine(s, l.G+l.F+k) }

// RoleOf says what machine m is in stripe s, and its position or index.
func (l Layout) RoleOf(s, m int) (Role, int) {
	j := l.roleIndex(s, m)
	switch {
	case j < l.G:
		return RoleData, j
	case j < l.G+l.F:
		return RoleParity, j - l.G
	case j < l.G+l.F+l.W:
		return RoleWitness, j - l.G - l.F
	}
	return RoleNone, 0
}

// ShardBlocks lists, in increasing order, the blocks owned by machine m.
func (l Layout) ShardBlocks(m int) []uint64 {
	var out []uint64
	for s := 0; s < l.Stripes; s++ {
		if r, p := l.RoleOf(s, m); r == RoleData {
			out = append(out, l.Block(s, p))
		}
	}
	return out
}

// StripesAs lists, in increasing order, the stripes where machine m plays role r.
func (l Layout) StripesAs(m int, r Role) []int {
	var out []int
	for s := 0; s < l.Stripes; s++ {
		if got, _ := l.RoleOf(s, m); got == r {
			out = append(out, s)
		}
	}
	return out
}

// Backups lists the machines holding parity (first, by index) and then
// witness roles for stripe s: the servers a data server prepares to.
func (l Layout) Backups(s int) []int {
	out := make([]int, 0, l.F+l.W)
	for k := 0; k < l.F; k++ {
		out = append(out, l.ParityMachine(s, k))
	}
	for k := 0; k < l.W; k++ {
		out = append(out, l.WitnessMachine(s, k))
	}
	return out
}
