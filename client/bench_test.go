package client_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
// (servers and clients) spent per write, and in durable mode the stores'
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
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	// Warm up: every client connects to every machine.
	for _, c := range cs {
		for m := 0; m < l.N; m++ {
			if err := c.Write(ctx, l.ShardBlocks(m)[0], 0, data); err != nil {
				b.Fatal(err)
			}
		}
	}

	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.SetBytes(int64(size))
	b.ResetTimer()
	cpu0, cpuOK := cpuTime()
	disk0 := runtime.StoreDiskStats()
	start := time.Now()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(i), 1))
			for next.Add(1) <= int64(b.N) {
				blk := rnd.Uint64N(l.NumBlocks())
				t0 := time.Now()
				if err := c.Write(ctx, blk, 0, data); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, _ := cpuTime()
	disk1 := runtime.StoreDiskStats()
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	if cpuOK {
		// CPU time of the whole process (servers and clients) per write:
		// steadier than throughput on a shared machine.
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(len(all)), "cpu-us/op")
	}
	if mode == "durable" {
		// What the stores asked of the disk (every machine's pebble:
		// WAL, flushes, compactions), per write and per byte written.
		b.ReportMetric(float64(disk1.Syncs-disk0.Syncs)/float64(len(all)), "syncs/op")
		b.ReportMetric(float64(disk1.BytesWritten-disk0.BytesWritten)/float64(len(all)*size), "disk-B/B")
	}
}
