package node

import "maps"

// SumMap is a map of immutable values whose hash, the XOR of its entries'
// hashes, is kept up to date, so that hashing it costs O(1) and does not
// depend on map order. The zero SumMap is empty and read-only.
type SumMap[K comparable, V any] struct {
	m    map[K]V
	sum  uint64
	hash func(K, V) uint64
}

// NewSumMap returns an empty map whose entries hash with hash.
func NewSumMap[K comparable, V any](hash func(K, V) uint64) SumMap[K, V] {
	return SumMap[K, V]{m: map[K]V{}, hash: hash}
}

// Get returns k's value.
func (s *SumMap[K, V]) Get(k K) (V, bool) {
	v, ok := s.m[k]
	return v, ok
}

// Put sets k's value.
func (s *SumMap[K, V]) Put(k K, v V) {
	if old, ok := s.m[k]; ok {
		s.sum ^= s.hash(k, old)
	}
	s.m[k] = v
	s.sum ^= s.hash(k, v)
}

// Range calls fn for every entry, in no particular order.
func (s SumMap[K, V]) Range(fn func(K, V)) {
	for k, v := range s.m {
		fn(k, v)
	}
}

// Clone returns a copy that shares the values but not the map.
func (s SumMap[K, V]) Clone() SumMap[K, V] {
	s.m = maps.Clone(s.m)
	return s
}

// Sum is the hash of the whole map.
func (s SumMap[K, V]) Sum() uint64 { return s.sum }
