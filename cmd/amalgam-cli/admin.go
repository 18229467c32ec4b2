package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/wire"
)

// amalgam-cli admin: operator commands answered by the reconfiguration
// service's leader (any replica in --cluster will do; the others name it).

func newAdminCmd(gl *globalFlags) *cobra.Command {
	admin := &cobra.Command{
		Use:   "admin",
		Short: "Operator commands: replace a server, show the configuration history",
	}
	admin.AddCommand(newAdminReplaceCmd(gl), newAdminConfigCmd(gl))
	return admin
}

func newAdminReplaceCmd(gl *globalFlags) *cobra.Command {
	var toSpare bool
	cmd := &cobra.Command{
		Use:   "replace <server>",
		Short: "Replace a server: data/N, parity/N, witness/N, or machine/N (all three)",
		Long: `replace asks the reconfiguration service to replace a server, whatever its
health. data/N, parity/N and witness/N start a new incarnation of that
server where machine slot N is served now (it starts empty and rebuilds its
blocks); machine/N replaces all of the slot's servers. With --to-spare, the
slot first moves to a live spare (amalgam-server node --spare), and the host
that served it stops.

The command returns once the service has the requests; follow the
replacement with amalgam-cli admin config and amalgam-cli status. A request
is postponed (and says so) while a stripe the server holds a block of has
f blocks degraded, replaced and not yet rebuilt: replacing it then would
lose the stripe (thesis 3.4.2). It starts by itself once they rebuild.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCluster(cmd, gl, func(ctx context.Context, c *client.Client) error {
				r, err := c.Replace(ctx, args[0], toSpare)
				if err != nil {
					return err
				}
				type reqJSON struct {
					Server string `json:"server"`
					Inc    uint64 `json:"incarnation"`
				}
				doc := struct {
					Requested []reqJSON `json:"requested"`
					Postponed []reqJSON `json:"postponed"`
					Host      string    `json:"host"`
				}{Requested: []reqJSON{}, Postponed: []reqJSON{}, Host: r.GetHost()}
				for _, q := range r.GetRequested() {
					doc.Requested = append(doc.Requested, reqJSON{roleAddr(q.GetRole(), q.GetMachine()), q.GetInc()})
				}
				for _, q := range r.GetPostponed() {
					doc.Postponed = append(doc.Postponed, reqJSON{roleAddr(q.GetRole(), q.GetMachine()), q.GetInc()})
				}
				w := cmd.OutOrStdout()
				if gl.output == "json" {
					return writeJSON(w, doc)
				}
				for _, q := range doc.Requested {
					fmt.Fprintf(w, "replacing %s (incarnation %d)\n", q.Server, q.Inc)
				}
				for _, q := range doc.Postponed {
					fmt.Fprintf(w, "postponed %s: a stripe it holds a block of has f blocks degraded; it starts once they are rebuilt\n", q.Server)
				}
				fmt.Fprintf(w, "its machine slot is served by %s\n", doc.Host)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&toSpare, "to-spare", false, "move the machine slot to a live spare first")
	return cmd
}

// roleAddr names a server of the wire's replace messages: "data/3".
func roleAddr(role, m int32) string { return string(msg.RoleAddr(erasure.Role(role), int(m))) }

func newAdminConfigCmd(gl *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the configuration history and the address book",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCluster(cmd, gl, func(ctx context.Context, c *client.Client) error {
				h, err := c.History(ctx)
				if err != nil {
					return err
				}
				return printHistory(cmd, gl, h)
			})
		},
	}
}

type configJSON struct {
	Num      uint64   `json:"num"`
	Replaced string   `json:"replaced,omitempty"`
	Data     []uint64 `json:"data"`
	Parity   []uint64 `json:"parity"`
	Witness  []uint64 `json:"witness"`
}

func printHistory(cmd *cobra.Command, gl *globalFlags, h *wire.HistoryResponse) error {
	doc := struct {
		Configs   []configJSON `json:"configs"`
		Hosts     []string     `json:"hosts"`
		Spares    []string     `json:"spares"`
		Version   uint64       `json:"address_book_version"`
		Replacing bool         `json:"replacing"`
		Postponed []string     `json:"postponed"`
		Degraded  []string     `json:"degraded"`
		Leader    string       `json:"leader,omitempty"`
	}{Configs: []configJSON{}, Hosts: h.GetDirectory().GetHosts(), Spares: h.GetDirectory().GetSpares(),
		Version: h.GetDirectory().GetVersion(), Replacing: h.GetBusy(), Postponed: []string{}, Degraded: h.GetDegraded(),
		Leader: h.GetLeaderAddr()}
	if doc.Spares == nil {
		doc.Spares = []string{}
	}
	if doc.Degraded == nil {
		doc.Degraded = []string{}
	}
	for _, q := range h.GetPostponed() {
		doc.Postponed = append(doc.Postponed, roleAddr(q.GetRole(), q.GetMachine()))
	}
	for _, c := range h.GetConfigs() {
		doc.Configs = append(doc.Configs, configJSON{Num: c.GetNum(), Replaced: c.GetChanged(), Data: c.GetData(),
			Parity: c.GetParity(), Witness: c.GetWitness()})
	}
	w := cmd.OutOrStdout()
	if gl.output == "json" {
		return writeJSON(w, doc)
	}
	for _, c := range doc.Configs {
		what := "initial"
		if c.Replaced != "" {
			what = "replaced " + c.Replaced
		}
		fmt.Fprintf(w, "configuration %d: %s; incarnations data %s parity %s witness %s\n", c.Num, what,
			incs(c.Data), incs(c.Parity), incs(c.Witness))
	}
	for m, host := range doc.Hosts {
		fmt.Fprintf(w, "machine %d at %s\n", m, host)
	}
	if len(doc.Spares) > 0 {
		fmt.Fprintf(w, "spares: %s\n", strings.Join(doc.Spares, ", "))
	}
	if doc.Leader != "" {
		fmt.Fprintf(w, "reconfiguration leader at %s\n", doc.Leader)
	}
	if len(doc.Degraded) > 0 {
		fmt.Fprintf(w, "replaced and still rebuilding: %s\n", strings.Join(doc.Degraded, ", "))
	}
	if len(doc.Postponed) > 0 {
		fmt.Fprintf(w, "postponed until they rebuild (a stripe has f blocks degraded): %s\n", strings.Join(doc.Postponed, ", "))
	}
	if doc.Replacing {
		fmt.Fprintln(w, "a replacement is in progress")
	}
	return nil
}

func incs(xs []uint64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, " ") + "]"
}
