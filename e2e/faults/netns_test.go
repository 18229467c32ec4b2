package faults_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// netns puts each machine and spare host in its own network namespace,
// joined to the test's namespace by a veth pair on a bridge; cutting a
// host's veth link partitions it from everyone. It needs root and
// iproute2.
type netns struct {
	tag    string // unique per test process
	subnet string // 10.213.X
	hostIP string // the bridge's address, where the replicas listen
}

func (n *netns) ns(i int) string   { return fmt.Sprintf("%s-%d", n.tag, i) }
func (n *netns) link(i int) string { return fmt.Sprintf("%sh%d", n.tag, i) }
func (n *netns) addr(i int) string { return fmt.Sprintf("%s.%d:7000", n.subnet, 10+i) }

// exec is the command prefix that runs a program in host i's namespace.
func (n *netns) exec(i int) []string { return []string{"ip", "netns", "exec", n.ns(i)} }

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newNetns makes the bridge and hosts namespaces, or says why it cannot.
func newNetns(hosts int) (*netns, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("partitions need root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("partitions need iproute2: %v", err)
	}
	pid := os.Getpid()
	n := &netns{tag: fmt.Sprintf("af%d", pid%100000), subnet: fmt.Sprintf("10.213.%d", pid%250)}
	n.hostIP = n.subnet + ".1"
	br := n.tag + "br"
	steps := [][]string{{"link", "add", br, "type", "bridge"}, {"addr", "add", n.hostIP + "/24", "dev", br}, {"link", "set", br, "up"}}
	for i := 0; i < hosts; i++ {
		peer := fmt.Sprintf("%sn%d", n.tag, i)
		steps = append(steps, []string{"netns", "add", n.ns(i)},
			[]string{"link", "add", n.link(i), "type", "veth", "peer", "name", peer},
			[]string{"link", "set", peer, "netns", n.ns(i)},
			[]string{"link", "set", n.link(i), "master", br},
			[]string{"link", "set", n.link(i), "up"},
			[]string{"-n", n.ns(i), "addr", "add", fmt.Sprintf("%s.%d/24", n.subnet, 10+i), "dev", peer},
			[]string{"-n", n.ns(i), "link", "set", peer, "up"},
			[]string{"-n", n.ns(i), "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			n.close()
			return nil, err
		}
	}
	return n, nil
}

// cut partitions host i from everyone (down) or heals it (up).
func (n *netns) cut(i int, down bool) error {
	state := "up"
	if down {
		state = "down"
	}
	return ipCmd("link", "set", n.link(i), state)
}

func (n *netns) close() {
	for i := 0; i < 64; i++ {
		if ipCmd("netns", "del", n.ns(i)) != nil {
			break
		}
	}
	_ = ipCmd("link", "del", n.tag+"br")
}
