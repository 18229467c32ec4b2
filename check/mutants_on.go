//go:build mutants

package check

import (
	"strings"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/witness"
)

// MutantsBuilt reports whether this binary carries the mutants.
const MutantsBuilt = true

// SetMutant injects the named mutant ("" removes any): a protocol,
// recovery or liveness bug through the Mutant hook of its package, a
// persistence bug by changing what restarted servers read back.
func SetMutant(name string) error {
	data.Mutant, parity.Mutant, witness.Mutant, reconfig.Mutant = "", "", "", ""
	persistMutant, releaseEarly = nil, nil
	if name == "" {
		return nil
	}
	m, err := LookupMutant(name)
	if err != nil {
		return err
	}
	if m.Kind == "persistence" {
		persistMutant, releaseEarly = diskBugs[name], earlyReleases[name]
		parity.Mutant = name // snapshot-restart-recopy: what Restore makes of what it read
		return nil
	}
	// Names are unique: each package reacts to its own only.
	data.Mutant, parity.Mutant, witness.Mutant, reconfig.Mutant = name, name, name, name
	return nil
}

// diskBugs are the persistence mutants: what a restarted server reads
// back instead of what it persisted.
var diskBugs = map[string]func(node.Addr, map[string][]byte){
	"data-no-opnum": func(a node.Addr, d map[string][]byte) {
		setDataOpNum(a, d, 1)
	},
	"data-no-blocks":      dropRecords("data/", "b/"),
	"data-no-clients":     dropRecords("data/", "c/"),
	"parity-no-prepares":  dropRecords("parity/", "p/"),
	"parity-no-blocks":    dropRecords("parity/", "b/"),
	"witness-no-prepares": dropRecords("witness/", "p/"),
	"witness-no-fence":    dropRecords("witness/", "rc"),
}

// earlyReleases are the persistence mutants of the host's sync rule: the
// handlers whose messages leave before their writes are durable.
var earlyReleases = map[string]func(node.Addr, node.Message) bool{
	"release-before-durable": func(node.Addr, node.Message) bool { return true },
	"prepare-before-durable": func(a node.Addr, m node.Message) bool {
		_, ok := m.(msg.Request)
		return strings.HasPrefix(string(a), "data/") && ok
	},
	"ack-before-durable": func(a node.Addr, m node.Message) bool {
		_, ok := m.(msg.Prepare)
		return strings.HasPrefix(string(a), "parity/") && ok
	},
}

// setDataOpNum sets the op counter in the "meta" record (configuration
// hash, op_num; node.Enc) of data servers.
func setDataOpNum(a node.Addr, disk map[string][]byte, opNum uint64) {
	if !strings.HasPrefix(string(a), "data/") {
		return
	}
	d := node.NewDec(disk["meta"])
	cfgHash := d.Uint64()
	_ = d.Uint64()
	if err := d.Err(); err != nil {
		panic(err)
	}
	var m node.Enc
	m.Uint64(cfgHash)
	m.Uint64(opNum)
	disk["meta"] = m.B
}

// dropRecords loses the records whose key starts with key of the servers
// whose address starts with prefix.
func dropRecords(prefix, key string) func(node.Addr, map[string][]byte) {
	return func(a node.Addr, disk map[string][]byte) {
		if strings.HasPrefix(string(a), prefix) {
			for k := range disk {
				if strings.HasPrefix(k, key) {
					delete(disk, k)
				}
			}
		}
	}
}
