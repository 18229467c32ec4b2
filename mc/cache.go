package mc

import (
	"sync"
)

// cache is a concurrent map with a bound on its size: each of its shards
// is emptied when it outgrows its share of the bound. Handler results and
// predicate results are cached in these; forgetting is always safe.
type cache[K comparable, V any] struct {
	per    int
	shards [64]struct {
		sync.Mutex
		m map[K]V
		_ [40]byte // keep shards on separate cache lines
	}
}

// memoEntries bounds the handler results kept per run; predicate caches
// keep at most predEntries results each.
const (
	memoEntries = 1 << 21
	predEntries = 1 << 20
)

func newCache[K comparable, V any](max int) *cache[K, V] {
	c := &cache[K, V]{per: max / 64}
	for i := range c.shards {
		c.shards[i].m = map[K]V{}
	}
	return c
}

// get looks k up; shard is a hash of k.
func (c *cache[K, V]) get(k K, shard uint64) (V, bool) {
	sh := &c.shards[shard>>58]
	sh.Lock()
	v, ok := sh.m[k]
	sh.Unlock()
	return v, ok
}

func (c *cache[K, V]) put(k K, shard uint64, v V) {
	sh := &c.shards[shard>>58]
	sh.Lock()
	if len(sh.m) >= c.per {
		clear(sh.m)
	}
	sh.m[k] = v
	sh.Unlock()
}
