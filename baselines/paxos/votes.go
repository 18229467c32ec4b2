package paxos

import "math/bits"

// Role is what a replica is doing for its group.
type Role uint8

// The roles.
const (
	Follower Role = iota
	Candidate
	Leader
)

func (r Role) String() string {
	switch r {
	case Candidate:
		return "candidate"
	case Leader:
		return "leader"
	}
	return "follower"
}

// MaxMembers is the largest group Votes can count.
const MaxMembers = 64

// Votes is a set of members of a group, as a bit mask: the members that
// promised a candidate's ballot, or that accepted a slot at the leader's.
type Votes uint64

// Vote is the set of member i alone.
func Vote(i int) Votes { return 1 << i }

// Has reports whether member i is in v.
func (v Votes) Has(i int) bool { return v&Vote(i) != 0 }

// Count is the number of members in v.
func (v Votes) Count() int { return bits.OnesCount64(uint64(v)) }
