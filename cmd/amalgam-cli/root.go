package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/internal/buildinfo"
	"github.com/amalgam-store/amalgam/internal/settings"
)

// defaultCluster is the entry address used when neither --cluster nor
// AMALGAM_CLUSTER is given.
const defaultCluster = "127.0.0.1:7400"

// globalFlags are the flags every subcommand shares.
type globalFlags struct {
	cluster string
	output  string
	timeout time.Duration
	// dialTimeout bounds connecting to the cluster, separately.
	dialTimeout time.Duration
	// Mutual TLS: the client's certificate and key, and the CA bundle
	// the servers' certificates chain to.
	tlsCert, tlsKey, tlsCA string
	// configFile is a YAML file of settings for the flags above.
	configFile string
}

// applyConfig fills the global flags not given on the command line from
// AMALGAM_* environment variables, then from --config (keys: the global
// flags' names).
func applyConfig(root *cobra.Command, gl *globalFlags) error {
	file, err := settings.Read(gl.configFile, "", nil)
	if err != nil {
		return err
	}
	return settings.Apply(root.PersistentFlags(), file, gl.configFile, "amalgam-cli")
}

func newRootCmd() *cobra.Command {
	gl := &globalFlags{}
	root := &cobra.Command{
		Use:   "amalgam-cli",
		Short: "Talk to an Amalgam cluster",
		Long: `amalgam-cli talks to an Amalgam cluster and inspects stripe layouts.

It finds the cluster through --cluster (default ` + defaultCluster + `, or the
AMALGAM_CLUSTER environment variable), prints text by default and JSON with
--output json, and exits with status 1 and a one-line reason on any error
(under --output json also {"error": "..."} on stdout). Connecting gives up
after --dial-timeout (default 2s) and says why: nothing listening, not a
gRPC server, or which TLS check failed.
For a cluster running mutual TLS, give --tls-cert, --tls-key and --tls-ca
(or AMALGAM_TLS_CERT, AMALGAM_TLS_KEY and AMALGAM_TLS_CA).

Every global flag can also come from an AMALGAM_* environment variable
(--dial-timeout: AMALGAM_DIAL_TIMEOUT) or a YAML --config file (or
AMALGAM_CLI_CONFIG) whose keys are their names (cluster, output, timeout,
dial-timeout, tls-cert, tls-key, tls-ca); flags win over the environment,
the environment over the file.

Talking to a cluster: status, health, locate, read, write, rmw, txn, import, export, admin. Offline: layout, mc,
version. Shell completion: amalgam-cli completion bash|zsh|fish|powershell.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd.Root(), gl); err != nil {
				return err
			}
			switch gl.output {
			case "text", "json":
			case "raw": // bytes as they are: read only
				if cmd.Name() != "read" {
					return fmt.Errorf("--output raw only goes with read")
				}
			default:
				return fmt.Errorf("--output must be text or json, got %q", gl.output)
			}
			if gl.timeout <= 0 {
				return fmt.Errorf("--timeout must be positive, got %v", gl.timeout)
			}
			if gl.dialTimeout <= 0 {
				return fmt.Errorf("--dial-timeout must be positive, got %v", gl.dialTimeout)
			}
			if gl.cluster == "" {
				return fmt.Errorf("--cluster must not be empty")
			}
			return nil
		},
	}

	cluster := os.Getenv("AMALGAM_CLUSTER")
	if cluster == "" {
		cluster = defaultCluster
	}
	pf := root.PersistentFlags()
	pf.StringVar(&gl.cluster, "cluster", cluster, "cluster entry address; several (the reconfiguration replicas) comma-separated (env AMALGAM_CLUSTER)")
	pf.StringVar(&gl.output, "output", "text", "output format: text or json (read also takes raw)")
	pf.DurationVar(&gl.timeout, "timeout", 10*time.Second, "give up on a request after this long")
	pf.DurationVar(&gl.dialTimeout, "dial-timeout", 2*time.Second, "give up connecting to the cluster after this long, naming the cause")
	pf.StringVar(&gl.tlsCert, "tls-cert", os.Getenv("AMALGAM_TLS_CERT"), "PEM client certificate for mutual TLS (env AMALGAM_TLS_CERT)")
	pf.StringVar(&gl.tlsKey, "tls-key", os.Getenv("AMALGAM_TLS_KEY"), "PEM private key of --tls-cert (env AMALGAM_TLS_KEY)")
	pf.StringVar(&gl.tlsCA, "tls-ca", os.Getenv("AMALGAM_TLS_CA"), "PEM CA bundle the servers' certificates chain to; turns TLS on (env AMALGAM_TLS_CA)")
	pf.StringVar(&gl.configFile, "config", os.Getenv("AMALGAM_CLI_CONFIG"),
		"YAML file whose keys are the global flags' names (env AMALGAM_CLI_CONFIG); flags > AMALGAM_* env > file > defaults")

	root.AddCommand(buildinfo.Command("amalgam-cli", &gl.output), newLayoutCmd(gl), newMCCmd(gl),
		newStatusCmd(gl), newHealthCmd(gl), newLocateCmd(gl), newReadCmd(gl), newWriteCmd(gl), newRMWCmd(gl), newTxnCmd(gl), newAdminCmd(gl),
		newBenchCmd(gl), newImportCmd(gl), newExportCmd(gl))
	return root
}

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
