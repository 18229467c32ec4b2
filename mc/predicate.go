package mc

import (
	"fmt"
	"strings"
)

// Predicate is a named property of a state. Check returns whether the
// state satisfies it and, either way, a short explanation (DSLabs'
// annotated predicates, thesis 4.3.4.1).
type Predicate struct {
	Name  string
	Check func(*State) (ok bool, explanation string)
	// Reads, if set, is what Check reads of the nodes (see Projection).
	Reads *Projection
}

// Pred names a check.
func Pred(name string, check func(*State) (bool, string)) Predicate {
	return Predicate{Name: name, Check: check}
}

// Test evaluates p on s.
func (p Predicate) Test(s *State) (bool, string) { return p.Check(s) }

func names(ps []Predicate) string {
	ns := make([]string, len(ps))
	for i, p := range ps {
		ns[i] = p.Name
	}
	return strings.Join(ns, ", ")
}

// And holds when every p holds; it explains the first that does not.
func And(ps ...Predicate) Predicate {
	return Pred("("+strings.Join(strings.Split(names(ps), ", "), " and ")+")", func(s *State) (bool, string) {
		for _, p := range ps {
			if ok, why := p.Check(s); !ok {
				return false, p.Name + ": " + why
			}
		}
		return true, "all of " + names(ps) + " hold"
	})
}

// Or holds when some p holds; it explains every failure otherwise.
func Or(ps ...Predicate) Predicate {
	return Pred("("+strings.Join(strings.Split(names(ps), ", "), " or ")+")", func(s *State) (bool, string) {
		var whys []string
		for _, p := range ps {
			ok, why := p.Check(s)
			if ok {
				return true, p.Name + ": " + why
			}
			whys = append(whys, p.Name+": "+why)
		}
		return false, strings.Join(whys, "; ")
	})
}

// Not holds when p does not.
func Not(p Predicate) Predicate {
	return Pred("not "+p.Name, func(s *State) (bool, string) {
		ok, why := p.Check(s)
		return !ok, why
	})
}

// Implies holds when a does not hold or b holds.
func Implies(a, b Predicate) Predicate {
	return Pred(fmt.Sprintf("(%s implies %s)", a.Name, b.Name), func(s *State) (bool, string) {
		if ok, why := a.Check(s); !ok {
			return true, a.Name + " does not hold: " + why
		}
		ok, why := b.Check(s)
		return ok, b.Name + ": " + why
	})
}

// Named renames p.
func Named(name string, p Predicate) Predicate { p.Name = name; return p }
