// Package nodetest is test support for protocol code: a node.Context that
// records what handlers do (Send, Stream, SetTimer) in order, filters over
// the recorded effects, and a readable rendering of messages and timers.
// Protocol rooms import it from their _test.go files only.
package nodetest

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// Kind is how a handler caused an effect.
type Kind string

// The kinds of effect, one per node.Context method.
const (
	Send   Kind = "send"   // unordered message
	Stream Kind = "stream" // ordered stream message
	Timer  Kind = "timer"  // SetTimer
)

// Effect is one thing a handler did through the context.
type Effect struct {
	Kind     Kind
	To       node.Addr    // receiver; "" for timers
	Msg      node.Message // nil for timers
	Timer    node.Timer   // nil for messages
	Min, Max time.Duration
}

// String renders the effect, e.g. "stream parity/3 Prepare{Shard:0 ...}"
// or "timer data.retryRecovery 50ms..100ms".
func (e Effect) String() string {
	if e.Kind == Timer {
		return fmt.Sprintf("timer %s %v..%v", Format(e.Timer), e.Min, e.Max)
	}
	return fmt.Sprintf("%s %s %s", e.Kind, e.To, Format(e.Msg))
}

// Ctx is a node.Context that records effects. The zero value has address "".
type Ctx struct {
	self node.Addr
	out  Effects
}

// New returns a context for the node at self.
func New(self node.Addr) *Ctx { return &Ctx{self: self} }

// Self implements node.Context.
func (c *Ctx) Self() node.Addr { return c.self }

// Send implements node.Context.
func (c *Ctx) Send(to node.Addr, m node.Message) {
	c.out = append(c.out, Effect{Kind: Send, To: to, Msg: m})
}

// Stream implements node.Context.
func (c *Ctx) Stream(to node.Addr, m node.Message) {
	c.out = append(c.out, Effect{Kind: Stream, To: to, Msg: m})
}

// SetTimer implements node.Context.
func (c *Ctx) SetTimer(t node.Timer, lo, hi time.Duration) {
	c.out = append(c.out, Effect{Kind: Timer, Timer: t, Min: lo, Max: hi})
}

// Effects returns what was recorded since the last Take or Reset, without
// forgetting it.
func (c *Ctx) Effects() Effects { return append(Effects(nil), c.out...) }

// Take returns what was recorded since the last Take or Reset and forgets it.
func (c *Ctx) Take() Effects {
	out := c.out
	c.out = nil
	return out
}

// Reset forgets what was recorded.
func (c *Ctx) Reset() { c.out = nil }

// Effects is a list of recorded effects, in the order they happened.
type Effects []Effect

// Kind keeps the effects of kind k.
func (es Effects) Kind(k Kind) Effects {
	return es.Filter(func(e Effect) bool { return e.Kind == k })
}

// To keeps the messages to a.
func (es Effects) To(a node.Addr) Effects {
	return es.Filter(func(e Effect) bool { return e.Kind != Timer && e.To == a })
}

// Filter keeps the effects keep accepts.
func (es Effects) Filter(keep func(Effect) bool) Effects {
	var out Effects
	for _, e := range es {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Messages keeps the messages, sent and streamed.
func (es Effects) Messages() Effects {
	return es.Filter(func(e Effect) bool { return e.Kind != Timer })
}

// Addrs lists the receivers of the messages, in order.
func (es Effects) Addrs() []node.Addr {
	var out []node.Addr
	for _, e := range es {
		if e.Kind != Timer {
			out = append(out, e.To)
		}
	}
	return out
}

// String renders one effect per line.
func (es Effects) String() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.String()
	}
	return strings.Join(lines, "\n")
}

// Of keeps the messages of type M.
func Of[M node.Message](es Effects) Effects {
	return es.Filter(func(e Effect) bool {
		_, ok := e.Msg.(M)
		return ok
	})
}

// Msgs returns the messages of type M, in order.
func Msgs[M node.Message](es Effects) []M {
	var out []M
	for _, e := range es {
		if m, ok := e.Msg.(M); ok {
			out = append(out, m)
		}
	}
	return out
}

// Format renders a message or timer value readably and deterministically:
// the type name without its package, fields by name, byte slices in hex,
// named scalars by their String method, and nil pointers, empty slices and
// strings and false left out.
func Format(v any) string {
	if v == nil {
		return "<nil>"
	}
	var b strings.Builder
	format(&b, reflect.ValueOf(v), true)
	return b.String()
}

func format(b *strings.Builder, v reflect.Value, top bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Map:
	default:
		if s, ok := stringer(v); ok {
			b.WriteString(s) // a named value such as an enum
			return
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		if top {
			b.WriteString(v.Type().Name()) // nested structs go by their field name
		}
		b.WriteByte('{')
		first := true
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if isEmpty(f) {
				continue
			}
			if !first {
				b.WriteByte(' ')
			}
			first = false
			b.WriteString(v.Type().Field(i).Name)
			b.WriteByte(':')
			format(b, f, false)
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			for i := 0; i < v.Len(); i++ {
				fmt.Fprintf(b, "%02x", v.Index(i).Uint())
			}
			return
		}
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			format(b, v.Index(i), false)
		}
		b.WriteByte(']')
	case reflect.Map:
		fmt.Fprintf(b, "map[%d]", v.Len()) // contents are unordered: only the size
	case reflect.String:
		b.WriteString(v.String())
	case reflect.Bool:
		fmt.Fprint(b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fmt.Fprint(b, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		fmt.Fprint(b, v.Uint())
	default:
		fmt.Fprintf(b, "<%s>", v.Kind())
	}
}

// isEmpty reports whether a field is left out: nil pointers, interfaces,
// slices and maps, empty slices and strings, and false.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map:
		return v.IsNil()
	case reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	}
	return false
}

// stringer returns v's String() when its type has one and v can be read.
func stringer(v reflect.Value) (string, bool) {
	if !v.CanInterface() {
		return "", false
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String(), true
	}
	return "", false
}
