package msg

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/node"
)

// Config is one numbered cluster configuration: the layout and the
// incarnation of every server. The reconfiguration service issues them in
// order; until it runs, every server starts from configuration 0.
type Config struct {
	Num    uint64
	Layout erasure.Layout
	// Data[m], Parity[m] and Witness[m] are the incarnation numbers of the
	// servers on machine m. Data[m] is the shard's primary_num.
	Data, Parity, Witness []uint64
	// Changed is the server this configuration replaced ("" for 0).
	Changed node.Addr
}

// InitialConfig is configuration 0 for a layout: every server is
// incarnation 1.
func InitialConfig(l erasure.Layout) Config {
	ones := func() []uint64 {
		v := make([]uint64, l.N)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	return Config{Layout: l, Data: ones(), Parity: ones(), Witness: ones()}
}

// Addresses of the servers on machine m.
func DataAddr(m int) node.Addr    { return node.Addr("data/" + strconv.Itoa(m)) }
func ParityAddr(m int) node.Addr  { return node.Addr("parity/" + strconv.Itoa(m)) }
func WitnessAddr(m int) node.Addr { return node.Addr("witness/" + strconv.Itoa(m)) }
func ClientAddr(c int) node.Addr  { return node.Addr("client/" + strconv.Itoa(c)) }

// RoleAddr is the address of machine m's server of role r.
func RoleAddr(r erasure.Role, m int) node.Addr {
	switch r {
	case erasure.RoleData:
		return DataAddr(m)
	case erasure.RoleParity:
		return ParityAddr(m)
	}
	return WitnessAddr(m)
}

// ParseAddr splits "role/index" into its parts.
func ParseAddr(a node.Addr) (role string, index int, err error) {
	role, num, ok := strings.Cut(string(a), "/")
	index, err = strconv.Atoi(num)
	if !ok || role == "" || err != nil || index < 0 {
		return "", 0, fmt.Errorf("bad address %q", a)
	}
	return role, index, nil
}

// Incarnations calls fn with every server of the configuration and its
// incarnation, machine by machine: data, parity, witness. Servers pass it
// on as node.Peered.PeerIncarnations.
func (c Config) Incarnations(fn func(a node.Addr, inc uint64)) {
	for m := 0; m < c.Layout.N && m < len(c.Data) && m < len(c.Parity) && m < len(c.Witness); m++ {
		fn(DataAddr(m), c.Data[m])
		fn(ParityAddr(m), c.Parity[m])
		fn(WitnessAddr(m), c.Witness[m])
	}
}

// Hash adds the configuration to h.
func (c Config) Hash(h *node.Hasher) {
	h.Uint64(c.Num)
	l := c.Layout
	for _, v := range []int{l.N, l.G, l.F, l.W, l.Stripes, l.BlockSize} {
		h.Int(v)
	}
	h.String(string(c.Changed))
	for _, xs := range [][]uint64{c.Data, c.Parity, c.Witness} {
		h.Uint64s(xs)
	}
}

// Clone returns a deep copy.
func (c Config) Clone() Config {
	c.Data = append([]uint64(nil), c.Data...)
	c.Parity = append([]uint64(nil), c.Parity...)
	c.Witness = append([]uint64(nil), c.Witness...)
	return c
}

// ReadConfig reads back the configuration a server persisted under "cfg"
// and checks it against the layout the server was built with (cur) and the
// configuration hash stored with the rest of its state. With nothing
// stored (state written before configurations were kept), the stored hash
// must be cur's and found is false. who names the server in errors.
func ReadConfig(r node.Reader, who string, cur Config, storedHash uint64) (cfg Config, found bool, err error) {
	v, ok, err := r.Get("cfg")
	if err != nil {
		return cur, false, err
	}
	if !ok {
		if storedHash != node.HashOf(cur) {
			return cur, false, fmt.Errorf("%s: stored state is for another configuration (layout or incarnations changed)", who)
		}
		return cur, false, nil
	}
	if err := node.GobDecode(v, &cfg); err != nil {
		return cur, false, fmt.Errorf("%s: cfg: %w", who, err)
	}
	n := cfg.Layout.N
	if cfg.Layout != cur.Layout || node.HashOf(cfg) != storedHash || len(cfg.Data) != n || len(cfg.Parity) != n || len(cfg.Witness) != n {
		return cur, false, fmt.Errorf("%s: stored state is for another layout (or torn)", who)
	}
	return cfg, true, nil
}
