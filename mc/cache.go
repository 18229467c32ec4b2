package mc

import (
	"sync"
)

// Cache is a concurrent map with a bound on its size: each of its shards
// is emptied when it outgrows its share of the bound. Handler results and
// predicate results are cached in these; forgetting is always safe.
type Cache[K comparable, V any] struct {
	per    int
	shards [64]struct {
		sync.Mutex
		m map[K]V
		_ [48]byte // 64 bytes a shard, a cache line
	}
}

// memoEntries bounds the handler results kept per run; predicate caches
// should keep at most PredEntries results each.
const (
	memoEntries = 1 << 21
	PredEntries = 1 << 20
)

// NewCache returns a cache of at most about max entries.
func NewCache[K comparable, V any](max int) *Cache[K, V] {
	c := &Cache[K, V]{per: max / 64}
	for i := range c.shards {
		c.shards[i].m = map[K]V{}
	}
	return c
}

// Get looks k up; shard is a hash of k (its top 6 bits pick the shard).
func (c *Cache[K, V]) Get(k K, shard uint64) (V, bool) {
	sh := &c.shards[shard>>58]
	sh.Lock()
	v, ok := sh.m[k]
	sh.Unlock()
	return v, ok
}

// Put stores v under k; shard is the hash Get takes.
func (c *Cache[K, V]) Put(k K, shard uint64, v V) {
	sh := &c.shards[shard>>58]
	sh.Lock()
	if len(sh.m) >= c.per {
		clear(sh.m)
	}
	sh.m[k] = v
	sh.Unlock()
}
