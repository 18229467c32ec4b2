package online

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// Machines is a Source that asks every machine over its Online
// service, all at once, for a snapshot of cluster ("" accepts any).
func Machines(conns []grpc.ClientConnInterface, addrs []string, cluster string) Source {
	return func(ctx context.Context) ([]*runtime.Snapshot, error) {
		return all(len(conns), func(i int) (*runtime.Snapshot, error) {
			b, err := fetch(ctx, conns[i], cluster)
			if err != nil {
				return nil, fmt.Errorf("snapshot of machine %d (%s): %w", i, addrs[i], err)
			}
			return runtime.DecodeSnapshot(b)
		})
	}
}

// fetch reads one machine's snapshot, joining its chunks.
func fetch(ctx context.Context, cc grpc.ClientConnInterface, cluster string) ([]byte, error) {
	st, err := wire.NewOnlineClient(cc).Snapshot(ctx, &wire.SnapshotRequest{Cluster: cluster})
	if err != nil {
		return nil, err
	}
	var b []byte
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		b = append(b, c.GetData()...)
	}
}

// Local is a Source over machines in this process.
func Local(machines []*runtime.Machine) Source {
	return func(ctx context.Context) ([]*runtime.Snapshot, error) {
		return all(len(machines), func(i int) (*runtime.Snapshot, error) {
			return machines[i].Snapshot(ctx, runtime.SnapshotLimits{})
		})
	}
}

// all runs get for 0..n-1 at once.
func all(n int, get func(i int) (*runtime.Snapshot, error)) ([]*runtime.Snapshot, error) {
	snaps := make([]*runtime.Snapshot, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snaps[i], errs[i] = get(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return snaps, nil
}
