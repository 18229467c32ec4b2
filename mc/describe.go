package mc

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/node"
)

// Describe renders a node, message or timer for traces: its Describe
// (node.Describer) or String (fmt.Stringer) if it has one, and otherwise
// its type name and fields, following pointers (never printing an
// address), bytes in hex and map entries in sorted order, so that the
// text is the same in every run. Values nested in v describe themselves
// the same way.
func Describe(v any) string {
	var b strings.Builder
	describe(&b, reflect.ValueOf(v), 0)
	return b.String()
}

// maxNesting stops the rendering of cyclic values.
const maxNesting = 12

var (
	describerType = reflect.TypeFor[node.Describer]()
	stringerType  = reflect.TypeFor[fmt.Stringer]()
)

func describe(b *strings.Builder, v reflect.Value, depth int) {
	if !v.IsValid() {
		b.WriteString("nil")
		return
	}
	if depth > maxNesting {
		b.WriteString("...")
		return
	}
	if v.CanInterface() && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		switch {
		case v.Type().Implements(describerType):
			b.WriteString(v.Interface().(node.Describer).Describe())
			return
		case v.Type().Implements(stringerType):
			b.WriteString(v.Interface().(fmt.Stringer).String())
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		describe(b, v.Elem(), depth+1)
	case reflect.Struct:
		b.WriteString(v.Type().Name())
		b.WriteByte('{')
		for i := 0; i < v.NumField(); i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(v.Type().Field(i).Name)
			b.WriteByte(':')
			describe(b, v.Field(i), depth+1)
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Kind() == reflect.Slice && v.IsNil() {
				b.WriteString("nil")
				return
			}
			bs := make([]byte, v.Len())
			for i := range bs {
				bs[i] = byte(v.Index(i).Uint())
			}
			b.WriteString(hex.EncodeToString(bs))
			return
		}
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			describe(b, v.Index(i), depth+1)
		}
		b.WriteByte(']')
	case reflect.Map:
		entries := make([]string, 0, v.Len())
		it := v.MapRange()
		for it.Next() {
			var e strings.Builder
			describe(&e, it.Key(), depth+1)
			e.WriteByte(':')
			describe(&e, it.Value(), depth+1)
			entries = append(entries, e.String())
		}
		slices.Sort(entries)
		b.WriteString("map[" + strings.Join(entries, " ") + "]")
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		b.WriteString(v.Type().String())
	default:
		fmt.Fprint(b, v.Kind())
	}
}
