package client_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/bench/loadgen"
	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/runtime"
)

// BenchmarkWrite measures whole-block writes through the Go client on an
// in-process cluster built exactly as `amalgam-server dev` builds it
// (runtime.StartLocal: the configuration endpoint and 5 machines, each
// on its own loopback gRPC port, g=3, f=2, w=0, 1024 blocks), in memory
// and in durable mode (pebble in a temporary directory, fsync before
// replying), for 4 KiB and 128 KiB blocks, with 1 and 32 concurrent
// clients, each running one write at a time on blocks drawn uniformly at
// random. It reports throughput (ops/s, MB/s), the p50 and p99 latency
// of one write as seen by the client, the CPU time the whole process
// (servers and clients) spent per write, the machines' messages to each
// other per write, and in durable mode the stores'
// syncs per write and bytes written to disk per byte the clients wrote.
//
//	go test -p 1 -run XXX -bench Write -benchtime 3s -count 3 ./client
func BenchmarkWrite(b *testing.B) {
	for _, mode := range []string{"memory", "durable"} {
		for _, size := range []int{4 << 10, 128 << 10} {
			for _, clients := range []int{1, 32} {
				b.Run(fmt.Sprintf("mode=%s/size=%dKiB/clients=%d", mode, size>>10, clients), func(b *testing.B) {
					benchWrite(b, mode, size, clients)
				})
			}
		}
	}
}

func benchWrite(b *testing.B, mode string, size, clients int) {
	// GOMAXPROCS as amalgam-server has it: raised for synced stores
	// (runtime.SyncProcs), as the process started for memory mode.
	if os.Getenv("GOMAXPROCS") == "" {
		procs := runtime.DefaultProcs()
		if mode == "durable" {
			procs = runtime.SyncProcs(procs)
		}
		defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
	}
	const blocks = 1024
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: (blocks + 2) / 3, BlockSize: size}
	lc, err := runtime.StartLocal(runtime.LocalOptions{Layout: l, Durability: mode, DataDir: b.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer lc.Close()
	ctx := context.Background()
	cs := make([]*client.Client, clients)
	for i := range cs {
		if cs[i], err = client.Dial(ctx, lc.EntryAddr, client.Options{AttemptTimeout: 30 * time.Second}); err != nil {
			b.Fatal(err)
		}
		defer cs[i].Close()
	}
	// Warm up: every client connects to every machine.
	data := make([]byte, size)
	doers := make([]loadgen.Doer, clients)
	for i, c := range cs {
		for m := 0; m < l.N; m++ {
			if err := c.Write(ctx, l.ShardBlocks(m)[0], 0, data); err != nil {
				b.Fatal(err)
			}
		}
		doers[i] = loadgen.TxnDoer{C: c}
	}

	var cpu0, cpu1 time.Duration
	var cpuOK bool
	var disk0, disk1 runtime.DiskStats
	var net0, net1 runtime.NetStats
	// AMALGAM_SYNC_CAUSES=1 logs the store writes per client write by
	// cause (runtime.SyncCauses).
	countCauses := mode == "durable" && os.Getenv("AMALGAM_SYNC_CAUSES") != ""
	var causes map[string]int
	// AMALGAM_STAGE_TIMES=1 logs how long the writes spent in each stage
	// of the servers (runtime.StageTimes).
	timeStages := os.Getenv("AMALGAM_STAGE_TIMES") != ""
	var stages []runtime.StageTime
	b.SetBytes(int64(size))
	spec := loadgen.Spec{Workload: loadgen.Write, BlockSize: size, Blocks: l.NumBlocks(), Clients: clients, Ops: int64(b.N)}
	res := loadgen.Run(ctx, spec, doers, func(at string) {
		if at == "start" {
			b.ResetTimer()
			cpu0, cpuOK = cpuTime()
			disk0 = runtime.StoreDiskStats()
			net0 = runtime.TransportStats()
			runtime.CountSyncCauses(countCauses)
			runtime.CountStageTimes(timeStages)
			return
		}
		cpu1, _ = cpuTime()
		disk1 = runtime.StoreDiskStats()
		net1 = runtime.TransportStats()
		b.StopTimer()
		causes = runtime.SyncCauses()
		runtime.CountSyncCauses(false)
		stages = runtime.StageTimes()
		runtime.CountStageTimes(false)
	})
	if res.Errors > 0 {
		b.Fatalf("%d writes failed, the first: %s", res.Errors, res.FirstError)
	}
	if res.Ops == 0 {
		return
	}
	b.ReportMetric(res.OpsPerSec, "ops/s")
	b.ReportMetric(res.P50ms, "p50-ms")
	b.ReportMetric(res.P99ms, "p99-ms")
	ops := float64(res.Ops)
	if cpuOK {
		// CPU time of the whole process (servers and clients) per write:
		// steadier than throughput on a shared machine.
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/ops, "cpu-us/op")
	}
	// Node traffic between machines (not the clients' calls): stream
	// messages, the frames that carried them, stream acknowledgements,
	// unordered sends (one gRPC
	// call each), and their encoded bytes per byte written.
	b.ReportMetric(float64(net1.StreamMsgs-net0.StreamMsgs)/ops, "msgs/op")
	b.ReportMetric(float64(net1.StreamFrames-net0.StreamFrames)/ops, "frames/op")
	b.ReportMetric(float64(net1.StreamAcks-net0.StreamAcks)/ops, "acks/op")
	b.ReportMetric(float64(net1.Sends-net0.Sends)/ops, "sends/op")
	b.ReportMetric(float64(net1.StreamBytes-net0.StreamBytes+net1.SendBytes-net0.SendBytes)/(ops*float64(size)), "net-B/B")
	if mode == "durable" {
		// What the stores asked of the disk (every machine's pebble:
		// WAL, flushes, compactions), per write and per byte written.
		b.ReportMetric(float64(disk1.Syncs-disk0.Syncs)/ops, "syncs/op")
		b.ReportMetric(float64(disk1.BytesWritten-disk0.BytesWritten)/(ops*float64(size)), "disk-B/B")
	}
	if countCauses {
		keys := slices.SortedFunc(maps.Keys(causes), func(x, y string) int { return causes[y] - causes[x] })
		// Printed, not logged: the benchmark log keeps 10 lines.
		fmt.Printf("store writes by cause, %s, %d writes:\n", b.Name(), res.Ops)
		for _, k := range keys {
			fmt.Printf("%8.3f per write  %s\n", float64(causes[k])/ops, k)
		}
	}
	if timeStages {
		fmt.Printf("stage times, %s, %d writes:\n", b.Name(), res.Ops)
		fmt.Printf("  %-28s %9s %9s %9s %9s %9s\n", "stage", "per write", "mean", "p50", "p90", "p99")
		for _, s := range stages {
			fmt.Printf("  %-28s %9.2f %9v %9v %9v %9v\n", s.Stage, float64(s.N)/ops, s.Mean.Round(time.Microsecond),
				s.P50.Round(time.Microsecond), s.P90.Round(time.Microsecond), s.P99.Round(time.Microsecond))
		}
	}
}

// BenchmarkShardedPaxosDurableWrite measures durable 4 KiB whole-block
// writes through the Go client on an in-process ShardedPaxos deployment
// (runtime.StartBaselineLocal: 3 groups, f=1, 1024 blocks, pebble in a
// temporary directory) with 1 and 32 concurrent clients: throughput, p50,
// and the stores' syncs, CPU and unordered batches per write.
//
//	go test -p 1 -run XXX -bench ShardedPaxosDurable -benchtime 20000x ./client
func BenchmarkShardedPaxosDurableWrite(b *testing.B) {
	for _, clients := range []int{1, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchShardedPaxos(b, clients) })
	}
}

func benchShardedPaxos(b *testing.B, clients int) {
	if os.Getenv("GOMAXPROCS") == "" {
		defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(runtime.SyncProcs(runtime.DefaultProcs())))
	}
	const size = 4 << 10
	l := erasure.Layout{N: 3, G: 1, F: 1, Stripes: 1024, BlockSize: size}
	bl, err := runtime.StartBaselineLocal("shardedpaxos", runtime.LocalOptions{Layout: l, Durability: "durable",
		DataDir: b.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Close()
	ctx := context.Background()
	doers := make([]loadgen.Doer, clients)
	data := make([]byte, size)
	for i := range doers {
		c, err := client.Dial(ctx, bl.EntryAddr, client.Options{AttemptTimeout: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for m := 0; m < l.N; m++ {
			if err := c.Write(ctx, l.ShardBlocks(m)[0], 0, data); err != nil {
				b.Fatal(err)
			}
		}
		doers[i] = loadgen.TxnDoer{C: c}
	}
	var disk [2]runtime.DiskStats // at the start and the end of the measured writes
	var net [2]runtime.NetStats
	var cpu [2]time.Duration
	var cpuOK bool
	spec := loadgen.Spec{Workload: loadgen.Write, BlockSize: size, Blocks: l.NumBlocks(), Clients: clients, Ops: int64(b.N)}
	res := loadgen.Run(ctx, spec, doers, func(at string) {
		end := at != "start"
		if !end {
			b.ResetTimer()
		}
		disk[btoi(end)] = runtime.StoreDiskStats()
		net[btoi(end)] = runtime.TransportStats()
		cpu[btoi(end)], cpuOK = cpuTime()
		if end {
			b.StopTimer()
		}
	})
	if res.Errors > 0 || res.Ops == 0 {
		b.Fatalf("%d writes, %d failed (the first: %s)", res.Ops, res.Errors, res.FirstError)
	}
	b.ReportMetric(res.OpsPerSec, "ops/s")
	b.ReportMetric(res.P50ms, "p50-ms")
	b.ReportMetric(float64(disk[1].Syncs-disk[0].Syncs)/float64(res.Ops), "syncs/op")
	if cpuOK {
		b.ReportMetric(float64((cpu[1]-cpu[0]).Microseconds())/float64(res.Ops), "cpu-us/op")
	}
	// Batches of unordered messages between hosts (the Paxos messages).
	b.ReportMetric(float64(net[1].Sends-net[0].Sends)/float64(res.Ops), "sends/op")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
