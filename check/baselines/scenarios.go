package baselines

import (
	"fmt"
	"slices"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
)

// Scenarios lists the baselines' scenarios.
func Scenarios() []*mc.Scenario {
	return []*mc.Scenario{ShardedPaxosNormal, ShardedPaxosLossy, ShardedPaxosTwoClients, ShardedPaxosRestartLeader,
		ShardedPaxosRestartWitness, RSPaxosNormal, RSPaxosLossy, RSPaxosRestartLeader, RSPaxosTwoClients}
}

// Replica is what the checks read of a member: the paxos core's view
// (paxos.Replica), which both baselines' replicas embed.
type Replica[I comparable] interface {
	node.Node
	Group() int
	Member() int
	Full() bool
	Role() string
	Leading() (paxos.Ballot, bool)
	Promised() paxos.Ballot
	Applied() uint64
	GC() uint64
	Slots() []paxos.SlotView[I]
}

// Replicas lists the nodes of s of type R, in address order.
func Replicas[R any](s *mc.State) []R {
	var out []R
	for _, a := range s.Addrs() {
		if r, ok := s.Node(a).(R); ok {
			out = append(out, r)
		}
	}
	return out
}

// LogSlots collects the log of every member of type R in s for
// OneValuePerSlot. Crashed members count: their acceptances happened.
func LogSlots[I comparable, R Replica[I]](s *mc.State) []Slot[paxos.Ballot, I] {
	var out []Slot[paxos.Ballot, I]
	for _, r := range Replicas[R](s) {
		out = append(out, slotsOf(r)...)
	}
	return out
}

func slotsOf[I comparable](r Replica[I]) []Slot[paxos.Ballot, I] {
	var out []Slot[paxos.Ballot, I]
	for _, v := range r.Slots() {
		out = append(out, Slot[paxos.Ballot, I]{Group: r.Group(), Member: r.Member(), Slot: v.Slot,
			Accepted: v.Accepted, Ballot: v.Ballot, Acc: v.Acc, Chosen: v.Chosen, Val: v.Val})
	}
	return out
}

// OneValuePerSlotPred is OneValuePerSlot over the slots slots returns.
func OneValuePerSlotPred[B, V comparable](slots func(*mc.State) []Slot[B, V], quorum int) mc.Predicate {
	return mc.Pred("one value per log slot", func(s *mc.State) (bool, string) {
		if why := OneValuePerSlot(slots(s), quorum); why != "" {
			return false, why
		}
		return true, "every slot has at most one chosen value"
	})
}

// applier is a replica with a log that is garbage-collected.
type applier interface {
	Group() int
	Applied() uint64
	GC() uint64
}

// GCSafe holds when no member discarded a slot that some replica holding
// state (selected by full) has not applied.
func GCSafe(full func(node.Node) bool) mc.Predicate {
	return mc.Pred("log discarded only once applied everywhere", func(s *mc.State) (bool, string) {
		minApplied := map[int]uint64{}
		for _, a := range s.Addrs() {
			if r, ok := s.Node(a).(applier); ok && full(s.Node(a)) {
				if m, seen := minApplied[r.Group()]; !seen || r.Applied() < m {
					minApplied[r.Group()] = r.Applied()
				}
			}
		}
		for _, a := range s.Addrs() {
			if r, ok := s.Node(a).(applier); ok && r.GC() > minApplied[r.Group()] {
				return false, fmt.Sprintf("%s discarded its log up to slot %d; a replica applied only %d", a, r.GC(), minApplied[r.Group()])
			}
		}
		return true, "every discarded slot is applied by every replica"
	})
}

func write(b uint64, v byte, n int) msg.Op {
	return msg.Op{Kind: msg.OpWrite, Block: b, Data: slices.Repeat([]byte{v}, n)}
}

func read(b uint64) msg.Op { return msg.Op{Kind: msg.OpRead, Block: b} }

// spCfg is the ShardedPaxos scenarios' deployment: f=1, so each group has
// two full replicas and one witness; block 0 is group 0's.
var spCfg = shardedpaxos.Config{Layout: erasure.Layout{N: 3, G: 1, F: 1, Stripes: 1, BlockSize: 8}}

// spInit builds the group and one client per script; client i first
// tries member first[i] (member 0, the initial leader, if not given).
func spInit(scripts [][][]msg.Op, first ...int) func() *mc.State {
	return func() *mc.State {
		nodes := shardedpaxos.Nodes(spCfg, []int{0})
		for i, sc := range scripts {
			c := shardedpaxos.NewClient(uint64(i+1), spCfg, sc)
			if i < len(first) {
				c.SetLeaderGuess(0, first[i])
			}
			nodes[msg.ClientAddr(i)] = c
		}
		return NewState(nodes)
	}
}

// restarting is init with the replica at a crashing at any moment and
// restarting from what it persisted (mc.State.Restartable) into the
// replica fresh makes for it, at most once per path, and up to timers
// timer firings per path. With lag, the replica runs ahead of its disk
// as on a pipelined host (mc.State.LagOn): its early messages (a leader's
// accept requests and replies) leave before its state is durable, the
// rest once a sync makes it durable, and a crash loses what was not.
func restarting(init func() *mc.State, fresh func(crashed node.Node) node.Persistent, a node.Addr, timers int, lag bool) (func() *mc.State, mc.Settings) {
	return func() *mc.State {
			s := init()
			s.Restartable(func(_ node.Addr, crashed node.Node) node.Persistent { return fresh(crashed) })
			if lag {
				s.LagOn(a)
			}
			return s
		}, mc.Settings{MaxTimerFires: timers, MaxCrashes: 1, MaxRestarts: 1,
			CrashTargets: []node.Addr{a}}
}

func spInvariants() []mc.Predicate {
	return []mc.Predicate{
		OneValuePerSlotPred(LogSlots[shardedpaxos.ID, *shardedpaxos.Replica], spCfg.Quorum()),
		ChosenDurable[shardedpaxos.ID, *shardedpaxos.Replica](spCfg.Quorum()),
		GCSafe(func(n node.Node) bool { return n.(*shardedpaxos.Replica).Full() }),
		mc.Linearizable(workload.Model(spCfg.Layout)),
	}
}

// rsCfg is the RSPaxos scenarios' deployment: f=1, groups of 4 with
// quorums of 3, blocks of 8 bytes in pieces of 4.
var rsCfg = rspaxos.Config{Layout: erasure.Layout{N: 4, G: 1, F: 1, Stripes: 1, BlockSize: 8}}

func rsInit(scripts [][][]msg.Op) func() *mc.State {
	return func() *mc.State {
		nodes, err := rspaxos.Nodes(rsCfg, []int{0})
		if err != nil {
			panic(err)
		}
		for i, sc := range scripts {
			nodes[msg.ClientAddr(i)] = rspaxos.NewClient(uint64(i+1), rsCfg, sc)
		}
		return NewState(nodes)
	}
}

func rsInvariants() []mc.Predicate {
	return []mc.Predicate{
		OneValuePerSlotPred(LogSlots[rspaxos.ID, *rspaxos.Replica], rsCfg.Quorum()),
		ChosenDurable[rspaxos.ID, *rspaxos.Replica](rsCfg.Quorum()),
		GCSafe(func(node.Node) bool { return true }),
		mc.Linearizable(workload.Model(rsCfg.Layout)),
	}
}

// The baselines' scenarios: one group, one or two clients, one or two
// operations each. The "normal" ones are small enough to explore to
// exhaustion; the others are searched within time limits.
var (
	ShardedPaxosNormal = scenario("shardedpaxos", "normal",
		"ShardedPaxos f=1 (2 replicas + 1 witness), 1 group; one client: write b0, read b0; "+
			"one timer firing per path (an election at any point, a heartbeat or a retry), no loss",
		spInit([][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}}), mc.Settings{MaxTimerFires: 1}, spInvariants)
	ShardedPaxosLossy = scenario("shardedpaxos", "lossy",
		"shardedpaxos-normal with up to 1 drop, 1 duplicate and 3 timer firings per path "+
			"(elections, heartbeats, retries)",
		ShardedPaxosNormal.Init, mc.Settings{MaxDrops: 1, MaxDuplicates: 1, MaxTimerFires: 3}, spInvariants)
	ShardedPaxosTwoClients = scenario("shardedpaxos", "two-clients",
		"ShardedPaxos f=1, 1 group; client 0 writes b0 (starting at member 0, the leader), client 1 "+
			"reads b0 (starting at member 1); up to 2 timer firings per path, no loss",
		spInit([][][]msg.Op{{{write(0, 1, 8)}}, {{read(0)}}}, 0, 1), mc.Settings{MaxTimerFires: 2}, spInvariants)
	ShardedPaxosRestartLeader = spRestartScenario("restart-leader", "shardedpaxos-normal with member 0, the leader, "+
		"running ahead of its disk (its accept requests and replies sent before they are durable), crashing at any "+
		"moment and restarting from what was durable (durable mode); up to 3 timer firings per path", 0)
	ShardedPaxosRestartWitness = spRestartScenario("restart-witness", "shardedpaxos-normal with member 2, the witness, "+
		"crashing at any moment and restarting from what it persisted (durable mode); up to 3 timer firings per path", 2)
	RSPaxosNormal = scenario("rspaxos", "normal",
		"RSPaxos f=1 (4 replicas, quorums of 3, 2 data + 2 parity pieces), 1 group; one client: "+
			"PUT b0, GET b0; no timers, no loss",
		rsInit([][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}}), mc.Settings{}, rsInvariants)
	RSPaxosLossy = scenario("rspaxos", "lossy",
		"rspaxos-normal with up to 1 drop, 1 duplicate and 2 timer firings per path",
		RSPaxosNormal.Init, mc.Settings{MaxDrops: 1, MaxDuplicates: 1, MaxTimerFires: 2}, rsInvariants)
	RSPaxosTwoClients = scenario("rspaxos", "two-clients",
		"RSPaxos f=1, 1 group; client 0 PUTs b0, client 1 GETs b0; up to 1 timer firing per path, no loss",
		rsInit([][][]msg.Op{{{write(0, 1, 8)}}, {{read(0)}}}), mc.Settings{MaxTimerFires: 1}, rsInvariants)
	RSPaxosRestartLeader = rsRestartScenario()
)

// spRestartScenario is ShardedPaxosNormal's deployment and script with
// member crashing and restarting (restarting) and 3 timer firings.
func spRestartScenario(name, doc string, member int) *mc.Scenario {
	init, settings := restarting(spInit([][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}}), func(crashed node.Node) node.Persistent {
		r := crashed.(*shardedpaxos.Replica)
		return shardedpaxos.NewReplica(spCfg, r.Group(), r.Member())
	}, spCfg.Addr(0, member), 3, member == 0)
	return scenario("shardedpaxos", name, doc, init, settings, spInvariants)
}

// rsRestartScenario is RSPaxosNormal with member 0, the leader, crashing
// and restarting (restarting) and 2 timer firings.
func rsRestartScenario() *mc.Scenario {
	code, err := rsCfg.NewCode()
	if err != nil {
		panic(err)
	}
	init, settings := restarting(rsInit([][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}}), func(crashed node.Node) node.Persistent {
		r := crashed.(*rspaxos.Replica)
		return rspaxos.NewReplica(rsCfg, code, r.Group(), r.Member())
	}, rsCfg.Addr(0, 0), 2, true)
	return scenario("rspaxos", "restart-leader", "rspaxos-normal with member 0, the leader, running ahead of its disk "+
		"(its accept requests and replies sent before they are durable), crashing at any moment and restarting from what was durable "+
		"(durable mode); up to 2 timer firings per path", init, settings, rsInvariants)
}

// scenario is the scenario system-name of a baseline, whose traces
// DescribeNode describes.
func scenario(system, name, doc string, init func() *mc.State, settings mc.Settings, inv func() []mc.Predicate) *mc.Scenario {
	return &mc.Scenario{Name: system + "-" + name, System: system, Describe: DescribeNode, Doc: doc, Init: init, Settings: settings,
		Invariants: inv}
}

// DefaultStates bounds the breadth-first searches of the tests'
// scenarios that are not exhaustive: over ten times the most states a
// restart mutant needed in the measured run (28,324; docs/baselines.md),
// a bound that does not depend on load. LongStates is the bound under -long.
const (
	DefaultStates = 400_000
	LongStates    = 1_000_000
)
