package paxos

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/node"
)

// Machines is the number of machines a deployment of groups groups of
// members members uses: one per group, but at least one per member, so
// that no machine holds two members of a group (thesis 3.6.2: "the number
// of groups or the number of replicas in each group, whichever is
// larger").
func Machines(groups, members int) int { return max(groups, members) }

// Machine is the machine hosting member i of group g: members are rotated
// across the machines like Amalgam's stripes, so member 0 of group g is on
// machine g.
func Machine(g, i, machines int) int { return (g + i) % machines }

// Addr is the address of member i of group g on machine m:
// "<prefix><g>.<i>/<m>". The part after the slash is the machine, as for
// Amalgam's servers.
func Addr(prefix string, g, i, m int) node.Addr {
	return node.Addr(fmt.Sprintf("%s%d.%d/%d", prefix, g, i, m))
}

// ParseAddr returns the group and member of an address Addr built with
// prefix; ok is false for any other address.
func ParseAddr(prefix string, a node.Addr) (g, i int, ok bool) {
	role, _, ok1 := strings.Cut(string(a), "/")
	rest, ok2 := strings.CutPrefix(role, prefix)
	gs, is, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, false
	}
	g, err1 := strconv.Atoi(gs)
	i, err2 := strconv.Atoi(is)
	if err1 != nil || err2 != nil || g < 0 || i < 0 {
		return 0, 0, false
	}
	return g, i, true
}
