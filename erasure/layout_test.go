package erasure

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// testLayouts are the (n, g, f, w) shapes the layout tests cover. Stripes is
// a multiple of n so that every machine plays every role equally often.
var testLayouts = []Layout{
	{N: 5, G: 3, F: 2, W: 0},
	{N: 6, G: 3, F: 2, W: 1},
	{N: 7, G: 3, F: 2, W: 2},
	{N: 10, G: 6, F: 3, W: 1},
	{N: 8, G: 3, F: 2, W: 1}, // more machines than roles: some sit a stripe out
	{N: 3, G: 2, F: 1, W: 0},
}

func withStripes(l Layout, stripes int) Layout {
	l.Stripes = stripes
	l.BlockSize = 16
	return l
}

func name(l Layout) string { return fmt.Sprintf("n%d_g%d_f%d_w%d", l.N, l.G, l.F, l.W) }

func TestLayoutRolesPerStripe(t *testing.T) {
	for _, base := range testLayouts {
		l := withStripes(base, 4*base.N)
		t.Run(name(l), func(t *testing.T) {
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			for s := 0; s < l.Stripes; s++ {
				count := map[Role]int{}
				dataPos := make([]int, 0, l.G)
				parityIdx := make([]int, 0, l.F)
				witnessIdx := make([]int, 0, l.W)
				for m := 0; m < l.N; m++ {
					r, i := l.RoleOf(s, m)
					count[r]++
					switch r {
					case RoleData:
						dataPos = append(dataPos, i)
						if got := l.DataMachine(s, i); got != m {
							t.Errorf("stripe %d: DataMachine(%d) = %d, RoleOf says %d", s, i, got, m)
						}
					case RoleParity:
						parityIdx = append(parityIdx, i)
						if got := l.ParityMachine(s, i); got != m {
							t.Errorf("stripe %d: ParityMachine(%d) = %d, RoleOf says %d", s, i, got, m)
						}
					case RoleWitness:
						witnessIdx = append(witnessIdx, i)
						if got := l.WitnessMachine(s, i); got != m {
							t.Errorf("stripe %d: WitnessMachine(%d) = %d, RoleOf says %d", s, i, got, m)
						}
					case RoleNone:
					default:
						t.Errorf("stripe %d machine %d: unknown role %d", s, m, r)
					}
				}
				// RoleOf gives each machine exactly one role, so no machine
				// plays two roles; the counts must be exact and each
				// position/index must occur once.
				if count[RoleData] != l.G || count[RoleParity] != l.F || count[RoleWitness] != l.W ||
					count[RoleNone] != l.N-l.G-l.F-l.W {
					t.Errorf("stripe %d: role counts %v, want %d data, %d parity, %d witness", s, count, l.G, l.F, l.W)
				}
				for _, c := range []struct {
					what string
					got  []int
					n    int
				}{{"data positions", dataPos, l.G}, {"parity indices", parityIdx, l.F}, {"witness indices", witnessIdx, l.W}} {
					slices.Sort(c.got)
					want := make([]int, c.n)
					for i := range want {
						want[i] = i
					}
					if !slices.Equal(c.got, want) {
						t.Errorf("stripe %d: %s %v, want %v", s, c.what, c.got, want)
					}
				}
				// The machines named by position are pairwise distinct.
				seen := map[int]string{}
				claim := func(m int, what string) {
					if prev, ok := seen[m]; ok {
						t.Errorf("stripe %d: machine %d is both %s and %s", s, m, prev, what)
					}
					seen[m] = what
				}
				for i := 0; i < l.G; i++ {
					claim(l.DataMachine(s, i), fmt.Sprintf("data %d", i))
				}
				for k := 0; k < l.F; k++ {
					claim(l.ParityMachine(s, k), fmt.Sprintf("parity %d", k))
				}
				for k := 0; k < l.W; k++ {
					claim(l.WitnessMachine(s, k), fmt.Sprintf("witness %d", k))
				}
				// Backups: parity machines by index, then witnesses.
				var want []int
				for k := 0; k < l.F; k++ {
					want = append(want, l.ParityMachine(s, k))
				}
				for k := 0; k < l.W; k++ {
					want = append(want, l.WitnessMachine(s, k))
				}
				if got := l.Backups(s); !slices.Equal(got, want) {
					t.Errorf("stripe %d: Backups = %v, want %v", s, got, want)
				}
			}
		})
	}
}

func TestLayoutBalanced(t *testing.T) {
	for _, base := range testLayouts {
		for _, mult := range []int{1, 3} {
			l := withStripes(base, mult*base.N)
			t.Run(fmt.Sprintf("%s_stripes%d", name(l), l.Stripes), func(t *testing.T) {
				wantData := l.Stripes * l.G / l.N
				wantParity := l.Stripes * l.F / l.N
				wantWitness := l.Stripes * l.W / l.N
				for m := 0; m < l.N; m++ {
					if got := len(l.ShardBlocks(m)); got != wantData {
						t.Errorf("machine %d holds %d data blocks, want %d", m, got, wantData)
					}
					if got := len(l.StripesAs(m, RoleData)); got != wantData {
						t.Errorf("machine %d is data in %d stripes, want %d", m, got, wantData)
					}
					if got := len(l.StripesAs(m, RoleParity)); got != wantParity {
						t.Errorf("machine %d holds %d parity blocks, want %d", m, got, wantParity)
					}
					if got := len(l.StripesAs(m, RoleWitness)); got != wantWitness {
						t.Errorf("machine %d witnesses %d stripes, want %d", m, got, wantWitness)
					}
					// Each parity index and data position is spread evenly too.
					perIdx := map[[2]int]int{}
					for s := 0; s < l.Stripes; s++ {
						r, i := l.RoleOf(s, m)
						perIdx[[2]int{int(r), i}]++
					}
					for key, n := range perIdx {
						if Role(key[0]) != RoleNone && n != mult {
							t.Errorf("machine %d plays role %d/%d in %d stripes, want %d", m, key[0], key[1], n, mult)
						}
					}
				}
			})
		}
	}
}

func TestLayoutStripesAsMatchesRoleOf(t *testing.T) {
	l := withStripes(Layout{N: 7, G: 3, F: 2, W: 2}, 20) // not a multiple of n
	for m := 0; m < l.N; m++ {
		for _, r := range []Role{RoleData, RoleParity, RoleWitness, RoleNone} {
			var want []int
			for s := 0; s < l.Stripes; s++ {
				if got, _ := l.RoleOf(s, m); got == r {
					want = append(want, s)
				}
			}
			if got := l.StripesAs(m, r); !slices.Equal(got, want) {
				t.Errorf("StripesAs(%d, %d) = %v, want %v", m, r, got, want)
			}
		}
	}
}

func TestLayoutLocateBlockRoundTrip(t *testing.T) {
	for _, base := range testLayouts {
		l := withStripes(base, 2*base.N+1)
		t.Run(name(l), func(t *testing.T) {
			if got, want := l.NumBlocks(), uint64(l.Stripes*l.G); got != want {
				t.Fatalf("NumBlocks = %d, want %d", got, want)
			}
			for b := uint64(0); b < l.NumBlocks(); b++ {
				s, p := l.Locate(b)
				if s < 0 || s >= l.Stripes || p < 0 || p >= l.G {
					t.Fatalf("Locate(%d) = (%d, %d), out of range", b, s, p)
				}
				if got := l.Block(s, p); got != b {
					t.Fatalf("Block(Locate(%d)) = %d", b, got)
				}
			}
			for s := 0; s < l.Stripes; s++ {
				for p := 0; p < l.G; p++ {
					if gs, gp := l.Locate(l.Block(s, p)); gs != s || gp != p {
						t.Fatalf("Locate(Block(%d, %d)) = (%d, %d)", s, p, gs, gp)
					}
				}
			}
		})
	}
}

func TestLayoutShardAgreesWithShardBlocks(t *testing.T) {
	for _, base := range testLayouts {
		l := withStripes(base, 2*base.N+3)
		t.Run(name(l), func(t *testing.T) {
			owner := map[uint64]int{}
			for m := 0; m < l.N; m++ {
				blocks := l.ShardBlocks(m)
				if !slices.IsSorted(blocks) {
					t.Errorf("ShardBlocks(%d) = %v, not increasing", m, blocks)
				}
				for _, b := range blocks {
					if prev, ok := owner[b]; ok {
						t.Errorf("block %d is in the shards of machines %d and %d", b, prev, m)
					}
					owner[b] = m
					if got := l.Shard(b); got != m {
						t.Errorf("block %d: Shard = %d, but ShardBlocks(%d) lists it", b, got, m)
					}
					s, p := l.Locate(b)
					if r, i := l.RoleOf(s, m); r != RoleData || i != p {
						t.Errorf("block %d (stripe %d pos %d): machine %d has role %d/%d", b, s, p, m, r, i)
					}
				}
			}
			if uint64(len(owner)) != l.NumBlocks() {
				t.Errorf("shards cover %d blocks, want %d", len(owner), l.NumBlocks())
			}
			// One block per stripe per data machine.
			for m := 0; m < l.N; m++ {
				stripes := map[int]bool{}
				for _, b := range l.ShardBlocks(m) {
					s, _ := l.Locate(b)
					if stripes[s] {
						t.Errorf("machine %d owns two blocks of stripe %d", m, s)
					}
					stripes[s] = true
				}
			}
		})
	}
}

// TestLayoutFigure34 checks the example of thesis figure 3.4: n=7, g=3,
// f=2, w=2. Rows are stripes, columns machines.
func TestLayoutFigure34(t *testing.T) {
	l := withStripes(Layout{N: 7, G: 3, F: 2, W: 2}, 6)
	type cell struct {
		r Role
		i int
	}
	d := func(i int) cell { return cell{RoleData, i} }
	p := func(i int) cell { return cell{RoleParity, i} }
	w := func(i int) cell { return cell{RoleWitness, i} }
	// Thesis figure 3.4, with positions 0-based (d_{s,1} is data 0).
	// Witness indices are not shown in the figure; ours run left to right
	// in role order.
	want := [][]cell{
		{d(0), d(1), d(2), p(0), p(1), w(0), w(1)},
		{d(1), d(2), p(0), p(1), w(0), w(1), d(0)},
		{d(2), p(0), p(1), w(0), w(1), d(0), d(1)},
		{p(0), p(1), w(0), w(1), d(0), d(1), d(2)},
		{p(1), w(0), w(1), d(0), d(1), d(2), p(0)},
		{w(0), w(1), d(0), d(1), d(2), p(0), p(1)},
	}
	for s, row := range want {
		for m, c := range row {
			if r, i := l.RoleOf(s, m); r != c.r || i != c.i {
				t.Errorf("stripe %d machine %d: role %d/%d, want %d/%d", s, m, r, i, c.r, c.i)
			}
		}
	}
	if got := l.DataMachine(1, 0); got != 6 {
		t.Errorf("stripe 1 data position 0 is on machine %d, want 6", got)
	}
	if got := l.Shard(l.Block(1, 0)); got != 6 {
		t.Errorf("Shard(block of stripe 1 pos 0) = %d, want 6", got)
	}
}

func TestLayoutValidate(t *testing.T) {
	good := Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 10, BlockSize: 4096}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid layout rejected: %v", err)
	}
	exact := Layout{N: 7, G: 3, F: 2, W: 2, Stripes: 1, BlockSize: 1}
	if err := exact.Validate(); err != nil {
		t.Fatalf("valid layout rejected: %v", err)
	}
	cases := []struct {
		name   string
		change func(*Layout)
		want   string
	}{
		{"too few machines", func(l *Layout) { l.N = 4 }, "need at least g+f+w=5 machines, got 4"},
		{"too few machines with witnesses", func(l *Layout) { l.W = 1 }, "need at least g+f+w=6 machines, got 5"},
		{"g zero", func(l *Layout) { l.G = 0 }, "g must be at least 1"},
		{"g negative", func(l *Layout) { l.G = -1 }, "g must be at least 1"},
		{"f zero", func(l *Layout) { l.F = 0 }, "f must be at least 1"},
		{"w negative", func(l *Layout) { l.W = -1 }, "w must not be negative"},
		{"stripes zero", func(l *Layout) { l.Stripes = 0 }, "stripes must be at least 1"},
		{"block size zero", func(l *Layout) { l.BlockSize = 0 }, "block size must be at least 1"},
		{"block size negative", func(l *Layout) { l.BlockSize = -4 }, "block size must be at least 1"},
		{"code too wide", func(l *Layout) { l.G, l.F, l.N = 250, 7, 300 }, "g+f must be at most 256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := good
			tc.change(&l)
			err := l.Validate()
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error mentioning %q", l, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate(%+v) = %q, want it to mention %q", l, err, tc.want)
			}
		})
	}
}
