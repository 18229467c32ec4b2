package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// The operator's view of an Amalgam cluster: each machine's state, what is
// degraded and why, and what one more failure would cost.

// Machine states.
const (
	stateUp         = "up"
	stateDown       = "down"       // no answer, or some of its servers did not answer
	stateBehind     = "behind"     // its servers are in an older configuration
	stateReplaced   = "replaced"   // a server is an older incarnation than the configuration's: it is fenced
	stateRebuilding = "rebuilding" // a replacement is rebuilding its blocks
	// The reconfiguration leader's failure detector suspects it (no
	// heartbeat for --suspect-after) and has not moved it to a spare.
	stateSuspected = "suspected"
)

type statusMachineJSON struct {
	Index int    `json:"index"`
	Addr  string `json:"addr"`
	State string `json:"state"`
	// Why explains a state other than up.
	Why     string   `json:"why,omitempty"`
	Servers []string `json:"servers"`
	// The incarnations the newest configuration gives the machine's
	// servers (witness 0 when the layout has none).
	DataIncarnation    uint64 `json:"data_incarnation"`
	ParityIncarnation  uint64 `json:"parity_incarnation"`
	WitnessIncarnation uint64 `json:"witness_incarnation,omitempty"`
	BytesStored        int64  `json:"bytes_stored"`
	// RebuiltPercent is set while the machine rebuilds.
	RebuiltPercent *float64 `json:"rebuilt_percent,omitempty"`

	// down: some of its servers did not answer (whatever State says).
	down bool
}

// unreachable reports whether some of the machine's servers did not answer.
func (m statusMachineJSON) unreachable() bool { return m.down || m.State == stateDown }

// machineViews derives each machine's state from the configuration, the
// servers that answered and the slots the reconfiguration leader suspects.
func machineViews(l erasure.Layout, cfgNum uint64, machines []*wire.Machine, nodes []statusNodeJSON, suspected []int) []statusMachineJSON {
	var out []statusMachineJSON
	for _, m := range machines {
		v := statusMachineJSON{Index: int(m.GetIndex()), Addr: m.GetAddr(), State: stateUp,
			DataIncarnation: m.GetDataIncarnation(), ParityIncarnation: m.GetParityIncarnation(), WitnessIncarnation: m.GetWitnessIncarnation()}
		want := map[string]uint64{"data": v.DataIncarnation, "parity": v.ParityIncarnation}
		v.Servers = []string{string(msg.DataAddr(v.Index)), string(msg.ParityAddr(v.Index))}
		if l.W > 0 {
			want["witness"] = v.WitnessIncarnation
			v.Servers = append(v.Servers, string(msg.WitnessAddr(v.Index)))
		}
		var missing, behind, fenced []string
		var blocks, left int64
		for _, s := range v.Servers {
			i := slices.IndexFunc(nodes, func(n statusNodeJSON) bool { return n.Addr == s })
			if i < 0 {
				missing = append(missing, s)
				continue
			}
			n := nodes[i]
			role, _, _ := msg.ParseAddr(node.Addr(s))
			v.BytesStored += n.BytesStored
			switch {
			case n.Incarnation < want[role]:
				fenced = append(fenced, fmt.Sprintf("%s is incarnation %d, the configuration has %d", s, n.Incarnation, want[role]))
			case n.ConfigNum < cfgNum:
				behind = append(behind, fmt.Sprintf("%s is in configuration %d of %d", s, n.ConfigNum, cfgNum))
			}
			blocks += n.Blocks
			left += n.DegradedBlocks
		}
		switch {
		case len(missing) == len(v.Servers):
			v.State, v.Why = stateDown, "did not answer"
		case len(missing) > 0:
			v.State, v.Why = stateDown, strings.Join(missing, ", ")+" did not answer"
		case len(fenced) > 0:
			v.State, v.Why = stateReplaced, strings.Join(fenced, "; ")
		case len(behind) > 0:
			v.State, v.Why = stateBehind, strings.Join(behind, "; ")
		case left > 0:
			pct := 100 * float64(max(blocks-left, 0)) / float64(max(blocks, 1))
			v.State, v.RebuiltPercent = stateRebuilding, &pct
			v.Why = fmt.Sprintf("%d of %d blocks left to rebuild (%.1f%% done)", left, blocks, pct)
		}
		v.down = len(missing) > 0
		if slices.Contains(suspected, v.Index) {
			why := "the reconfiguration leader hears no heartbeat from it and has not moved it to a spare"
			if v.State != stateUp {
				why = fmt.Sprintf("%s (%s); %s", v.State, v.Why, why)
			}
			v.State, v.Why, v.RebuiltPercent = stateSuspected, why, nil
		}
		out = append(out, v)
	}
	return out
}

// assessment is what the machine states mean for the data.
type assessment struct {
	// Problems: what is degraded and why, one line each.
	Problems []string `json:"problems"`
	// SpareAvailable: a registered spare can take a failed machine's slot.
	SpareAvailable bool `json:"spare_available"`
	// CanLose is how many more machines may fail before some stripe keeps
	// fewer than g of its g+f blocks (negative: some already has).
	CanLose int `json:"can_lose_machines"`
	// OneMore says what losing one more machine would mean.
	OneMore string `json:"one_more_failure"`
}

func assess(l erasure.Layout, machines []statusMachineJSON, spares int) assessment {
	a := assessment{Problems: []string{}, SpareAvailable: spares > 0}
	down := map[int]bool{}
	suspected := false
	for _, m := range machines {
		if m.unreachable() {
			down[m.Index] = true
		}
		suspected = suspected || m.State == stateSuspected
		if m.State != stateUp {
			a.Problems = append(a.Problems, fmt.Sprintf("machine %d (%s) is %s: %s", m.Index, m.Addr, m.State, m.Why))
		}
	}
	for _, m := range machines {
		if down[m.Index] {
			a.Problems = append(a.Problems, fmt.Sprintf("shard %d (%d blocks, served by machine %d) cannot be read or written until machine %d returns or is replaced",
				m.Index, len(l.ShardBlocks(m.Index)), m.Index, m.Index))
		}
	}
	// Stripes whose backups cannot reach a quorum (f of f+w) stall every
	// operation on them, on every shard with a block there.
	var noQuorum []int
	stalled := map[int]bool{}
	worst := 0
	for s := 0; s < l.Stripes; s++ {
		up := 0
		for _, b := range l.Backups(s) {
			if !down[b] {
				up++
			}
		}
		if up < l.F {
			noQuorum = append(noQuorum, s)
			for p := 0; p < l.G; p++ {
				if d := l.DataMachine(s, p); !down[d] {
					stalled[d] = true
				}
			}
		}
		worst = max(worst, erasures(l, s, down))
	}
	if len(noQuorum) > 0 {
		a.Problems = append(a.Problems, fmt.Sprintf("%d stripes have no quorum of parity servers and witnesses (need %d of %d): operations on their blocks stall on shards %s",
			len(noQuorum), l.F, l.F+l.W, joinInts(sortedKeys(stalled))))
	}
	a.CanLose = l.F - worst
	switch {
	case a.CanLose < 0:
		a.OneMore = "some stripes already keep fewer than g blocks: their data is unavailable until machines return"
	case a.CanLose == 0:
		a.OneMore = "a further failure can leave stripes with fewer than g blocks: their data would be unavailable, and lost if the machines do not return"
	case a.SpareAvailable:
		a.OneMore = "no data is lost; a spare takes the failed machine's slot and rebuilds it, its shard is unavailable meanwhile"
	default:
		a.OneMore = "no data is lost, but with no spare the failed machine is not replaced: its shard stays unavailable until it returns (or amalgam-cli admin replace)"
	}
	if !a.SpareAvailable && (len(down) > 0 || suspected) {
		a.Problems = append(a.Problems, "no spare is registered: down machines are not replaced automatically")
	}
	return a
}

// erasures counts stripe s's data and parity blocks on down machines.
func erasures(l erasure.Layout, s int, down map[int]bool) int {
	n := 0
	for p := 0; p < l.G; p++ {
		if down[l.DataMachine(s, p)] {
			n++
		}
	}
	for k := 0; k < l.F; k++ {
		if down[l.ParityMachine(s, k)] {
			n++
		}
	}
	return n
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// printMachines prints the machine table.
func printMachines(w io.Writer, l erasure.Layout, ms []statusMachineJSON) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tADDRESS\tSTATE\tSERVERS\tINCARNATION\tBYTES STORED")
	for _, m := range ms {
		inc := fmt.Sprintf("%d/%d", m.DataIncarnation, m.ParityIncarnation)
		if l.W > 0 {
			inc += fmt.Sprintf("/%d", m.WitnessIncarnation)
		}
		state := m.State
		if m.RebuiltPercent != nil {
			state += fmt.Sprintf(" %.0f%%", *m.RebuiltPercent)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\n", m.Index, m.Addr, state, strings.Join(m.Servers, " "), inc, m.BytesStored)
	}
	_ = tw.Flush()
}
