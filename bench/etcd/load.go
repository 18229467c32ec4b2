package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/amalgam-store/amalgam/bench/loadgen"
	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/msg"
)

// load runs the closed-loop generator against one system and prints
// "start", "end" and the result as JSON to out.
func load(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	system := fs.String("system", "etcd", "etcd, amalgam, shardedpaxos or rspaxos (amalgam-server dev --protocol P; rspaxos: write only)")
	endpoints := fs.String("endpoints", "", "etcd: client URLs, comma-separated; amalgam and the baselines: the entry address")
	var s loadgen.Spec
	fs.StringVar(&s.Workload, "workload", loadgen.Write, "write or add")
	fs.IntVar(&s.BlockSize, "block-size", 4096, "bytes per block (value size)")
	blocks := fs.Uint64("blocks", 1024, "keys: block ids 0..blocks-1")
	fs.IntVar(&s.Clients, "clients", 1, "closed-loop clients")
	fs.DurationVar(&s.Warmup, "warmup", time.Second, "warm-up")
	fs.DurationVar(&s.Duration, "duration", 5*time.Second, "measured interval")
	fs.Uint64Var(&s.Seed, "seed", 1, "workload seed")
	fs.Int64Var(&s.MinOps, "min-ops", 0, "measure past --duration until this many operations completed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s.Blocks = *blocks
	if err := s.Validate(); err != nil {
		return err
	}
	if !slices.Contains(loadgen.Systems, *system) {
		return fmt.Errorf("--system must be one of %s, got %q", strings.Join(loadgen.Systems, ", "), *system)
	}
	if why := loadgen.Unsupported(*system, s.Workload); why != "" {
		return errors.New(why)
	}
	if *endpoints == "" {
		return fmt.Errorf("--endpoints is required")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doers, closeAll, err := dial(ctx, *system, *endpoints, s)
	if err != nil {
		return err
	}
	defer closeAll()
	var mu sync.Mutex
	mark := func(m string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(out, m)
	}
	res := loadgen.Run(ctx, s, doers, mark)
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

// dial opens one client per closed-loop client.
func dial(ctx context.Context, system, endpoints string, s loadgen.Spec) ([]loadgen.Doer, func(), error) {
	var doers []loadgen.Doer
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	for range s.Clients {
		switch system {
		case "etcd":
			c, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			closers = append(closers, func() { _ = c.Close() })
			doers = append(doers, &etcdDoer{c: c, blockSize: s.BlockSize})
		default: // amalgam and the baselines: the Go client serves them all (it finds the protocol in Status)
			c, err := client.Dial(ctx, endpoints, client.Options{AttemptTimeout: 10 * time.Second})
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			closers = append(closers, c.Close)
			doers = append(doers, loadgen.TxnDoer{C: c})
		}
	}
	return doers, closeAll, nil
}

// etcdDoer maps a block to the key b/<block>: a write is a put of the
// block, an add a get and a compare-and-put (the key's mod revision
// unchanged) of the block with the add applied, retried on conflict.
type etcdDoer struct {
	c         *clientv3.Client
	blockSize int
}

func key(block uint64) string { return fmt.Sprintf("b/%08d", block) }

func (d *etcdDoer) Do(ctx context.Context, op msg.Op) (int, error) {
	k := key(op.Block)
	if op.Kind == msg.OpWrite {
		_, err := d.c.Put(ctx, k, string(op.Data))
		return 0, err
	}
	for retries := 0; ; retries++ {
		g, err := d.c.Get(ctx, k)
		if err != nil {
			return retries, err
		}
		var old []byte
		var rev int64
		if len(g.Kvs) > 0 {
			old, rev = g.Kvs[0].Value, g.Kvs[0].ModRevision
		}
		v := loadgen.ApplyAdd(old, d.blockSize, op)
		t, err := d.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
			Then(clientv3.OpPut(k, string(v))).Commit()
		if err != nil {
			return retries, err
		}
		if t.Succeeded {
			return retries, nil
		}
	}
}
