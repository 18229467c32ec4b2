package node

// Describer is implemented by nodes, messages and timers that describe
// themselves for people: the checker's traces print Describe instead of
// the value's type or fields. A description is one line, the same for
// equal values in every run: no pointers, no map iteration order.
// Messages and timers may implement fmt.Stringer instead.
type Describer interface {
	Describe() string
}
