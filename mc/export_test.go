package mc

// Internals for the engine's tests (package mc_test).

// CheckSums reports whether s's incrementally kept fingerprint parts
// match a computation from scratch.
func CheckSums(s *State) error { return s.checkSums() }

// Scratch builds successor states in reused buffers, as BFS does.
type Scratch struct{ sc scratch }

// Apply is State.Apply building the new state in the scratch buffers.
func (x *Scratch) Apply(s *State, e Event) (*State, error) { return s.apply(e, true, &x.sc, false) }

// Freeze copies the state last built out of the buffers.
func (x *Scratch) Freeze() *State { return x.sc.freeze() }
