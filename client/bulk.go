package client

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/wire"
)

// Range is a run of consecutive blocks seen as one array of bytes: byte x
// of the range is byte x mod BlockSize of block First + x / BlockSize.
type Range struct {
	First, Count uint64
	BlockSize    int
}

// Size is the range's length in bytes.
func (r Range) Size() int64 { return int64(r.Count) * int64(r.BlockSize) }

// Last is the range's last block.
func (r Range) Last() uint64 { return r.First + r.Count - 1 }

// RangeOf checks that blocks first to last exist in l and returns them as
// a Range.
func RangeOf(l erasure.Layout, first, last uint64) (Range, error) {
	if first > last {
		return Range{}, fmt.Errorf("%w: block range %d-%d is empty", ErrInvalid, first, last)
	}
	if last >= l.NumBlocks() {
		return Range{}, fmt.Errorf("%w: block range %d-%d goes past the last block (the cluster has blocks 0 to %d)",
			ErrInvalid, first, last, l.NumBlocks()-1)
	}
	return Range{First: first, Count: last - first + 1, BlockSize: l.BlockSize}, nil
}

// segment is the part of one block a byte range covers.
type segment struct {
	block  uint64
	offset int
	buf    []byte
}

// groups splits bytes [off, off+len(buf)) of r into per-block segments
// and groups them by shard, at most wire.MaxTxnOps segments to a group, so
// that each group is one transaction.
func (r Range) groups(l erasure.Layout, buf []byte, off int64) ([][]segment, error) {
	if off < 0 || off+int64(len(buf)) > r.Size() {
		return nil, fmt.Errorf("%w: bytes %d to %d are outside blocks %d-%d (%d bytes)", ErrInvalid, off, off+int64(len(buf)), r.First, r.Last(), r.Size())
	}
	byShard := map[int][]segment{}
	bs := int64(r.BlockSize)
	for len(buf) > 0 {
		inner := int(off % bs)
		n := min(len(buf), r.BlockSize-inner)
		b := r.First + uint64(off/bs)
		s := l.Shard(b)
		byShard[s] = append(byShard[s], segment{block: b, offset: inner, buf: buf[:n]})
		buf, off = buf[n:], off+int64(n)
	}
	var out [][]segment
	for _, s := range slices.Sorted(maps.Keys(byShard)) {
		segs := byShard[s]
		for len(segs) > 0 {
			n := min(len(segs), wire.MaxTxnOps)
			out = append(out, segs[:n])
			segs = segs[n:]
		}
	}
	return out, nil
}

// ReadAt fills buf from byte off of r. Each shard's blocks are read in one
// transaction (up to wire.MaxTxnOps blocks), and the transactions run
// concurrently on the pool's clients.
func (p *Pool) ReadAt(ctx context.Context, r Range, buf []byte, off int64) error {
	return p.txns(ctx, r, buf, off, func(s segment) msg.Op {
		return msg.Op{Kind: msg.OpRead, Block: s.block, Offset: s.offset, Length: len(s.buf)}
	}, func(g []segment, out msg.Outcome) error {
		for i, s := range g {
			if copy(s.buf, out.Results[i].Data) != len(s.buf) {
				return fmt.Errorf("block %d: read returned %d bytes, want %d", s.block, len(out.Results[i].Data), len(s.buf))
			}
		}
		return nil
	})
}

// WriteAt writes data at byte off of r: whole blocks as block writes,
// partial blocks as writes at an offset (the rest of the block is kept).
// Each shard's blocks are written by one transaction (up to
// wire.MaxTxnOps blocks), so they commit together; the transactions run
// concurrently and, if one fails, others may have committed.
func (p *Pool) WriteAt(ctx context.Context, r Range, data []byte, off int64) error {
	return p.txns(ctx, r, data, off, func(s segment) msg.Op {
		return msg.Op{Kind: msg.OpWrite, Block: s.block, Offset: s.offset, Data: s.buf}
	}, func([]segment, msg.Outcome) error { return nil })
}

// txns splits buf at byte off of r into one transaction per shard, of the
// ops op makes from the segments, runs them concurrently and hands each
// one's outcome to check.
func (p *Pool) txns(ctx context.Context, r Range, buf []byte, off int64, op func(segment) msg.Op, check func([]segment, msg.Outcome) error) error {
	groups, err := r.groups(p.Layout(), buf, off)
	if err != nil {
		return err
	}
	return p.each(groups, func(g []segment) error {
		ops := make([]msg.Op, len(g))
		for i, s := range g {
			ops[i] = op(s)
		}
		out, err := p.Txn(ctx, ops)
		if err != nil {
			return err
		}
		return check(g, out)
	})
}

// each runs f on every group concurrently and returns the first error.
func (p *Pool) each(groups [][]segment, f func([]segment) error) error {
	if len(groups) == 1 {
		return f(groups[0])
	}
	var wg sync.WaitGroup
	errs := make([]error, len(groups))
	for i, g := range groups {
		wg.Go(func() {
			errs[i] = f(g)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
