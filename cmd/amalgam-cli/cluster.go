package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/msg"
)

// The subcommands that talk to a cluster: status, read, write, rmw, txn.
// Every operation is checked against the cluster's layout before anything
// is sent, so bad input applies nothing.

// dialWith is the CLI's one way to connect: dial runs with the client
// options of the global flags (TLS, --dial-timeout, so that a cluster that
// cannot be reached fails fast naming the cause) under a context bounded
// by --timeout, which it returns with its cancel.
func dialWith[T any](cmd *cobra.Command, gl *globalFlags, dial func(context.Context, client.Options) (T, error)) (context.Context, context.CancelFunc, T, error) {
	var zero T
	opts := client.Options{DialTimeout: gl.dialTimeout}
	if gl.tlsCert != "" || gl.tlsKey != "" || gl.tlsCA != "" {
		tlsOpt, err := client.TLS(gl.tlsCert, gl.tlsKey, gl.tlsCA)
		if err != nil {
			return nil, nil, zero, err
		}
		opts.DialOptions = append(opts.DialOptions, tlsOpt)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), gl.timeout)
	c, err := dial(ctx, opts)
	if err != nil {
		cancel()
		return nil, nil, zero, err
	}
	return ctx, cancel, c, nil
}

// withCluster connects to --cluster, runs f within the request timeout,
// and closes the connection.
func withCluster(cmd *cobra.Command, gl *globalFlags, f func(context.Context, *client.Client) error) error {
	ctx, done, c, err := connect(cmd, gl)
	if err != nil {
		return err
	}
	defer done()
	return f(ctx, c)
}

// connect dials --cluster; done closes the client and ends the context.
func connect(cmd *cobra.Command, gl *globalFlags) (context.Context, func(), *client.Client, error) {
	ctx, cancel, c, err := dialWith(cmd, gl, func(ctx context.Context, o client.Options) (*client.Client, error) {
		return client.Dial(ctx, gl.cluster, o)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return ctx, func() { c.Close(); cancel() }, c, nil
}

// blockCmd makes cmd take one argument, a block number, and run run on it.
func blockCmd(cmd *cobra.Command, run func(cmd *cobra.Command, block uint64) error) *cobra.Command {
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		b, err := parseBlock(args[0])
		if err != nil {
			return err
		}
		return run(cmd, b)
	}
	return cmd
}

func parseBlock(s string) (uint64, error) {
	b, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("block %q is not a block number", s)
	}
	return b, nil
}

type resultJSON struct {
	Op      string  `json:"op"`
	Block   uint64  `json:"block"`
	Offset  int     `json:"offset"`
	DataHex *string `json:"data_hex,omitempty"`
	Value   *uint64 `json:"value,omitempty"`
	OK      *bool   `json:"ok,omitempty"`
}

type txnJSON struct {
	Aborted bool         `json:"aborted"`
	Results []resultJSON `json:"results"`
}

func describeResults(ops []msg.Op, out msg.Outcome) txnJSON {
	doc := txnJSON{Aborted: out.Aborted, Results: []resultJSON{}}
	if out.Aborted {
		return doc
	}
	for i, op := range ops {
		r := out.Results[i]
		j := resultJSON{Op: op.Kind.String(), Block: op.Block, Offset: op.Offset}
		switch op.Kind {
		case msg.OpRead:
			h := hex.EncodeToString(r.Data)
			j.DataHex = &h
		case msg.OpAdd:
			v := r.Value
			j.Value = &v
		case msg.OpCas:
			h := hex.EncodeToString(r.Data)
			ok := r.OK
			j.DataHex, j.OK = &h, &ok
		case msg.OpCheck:
			ok := r.OK
			j.OK = &ok
		}
		doc.Results = append(doc.Results, j)
	}
	return doc
}

func printTxn(cmd *cobra.Command, gl *globalFlags, ops []msg.Op, out msg.Outcome) error {
	w := cmd.OutOrStdout()
	if gl.output == "raw" {
		return writeRaw(w, ops, out)
	}
	doc := describeResults(ops, out)
	if gl.output == "json" {
		return writeJSON(w, doc)
	}
	if doc.Aborted {
		_, err := fmt.Fprintln(w, "aborted: a check failed; nothing was applied")
		return err
	}
	for _, r := range doc.Results {
		fmt.Fprintf(w, "%s block %d offset %d", r.Op, r.Block, r.Offset)
		if r.DataHex != nil {
			fmt.Fprintf(w, " data %s", *r.DataHex)
		}
		if r.Value != nil {
			fmt.Fprintf(w, " value %d", *r.Value)
		}
		if r.OK != nil {
			fmt.Fprintf(w, " ok %v", *r.OK)
		}
		fmt.Fprintln(w)
	}
	return nil
}

func runOps(cmd *cobra.Command, gl *globalFlags, ops []msg.Op) error {
	return withCluster(cmd, gl, func(ctx context.Context, c *client.Client) error {
		out, err := c.Txn(ctx, ops)
		if err != nil {
			return explainStuck(cmd, gl, c, ops, err)
		}
		return printTxn(cmd, gl, ops, out)
	})
}

// dataFlags are --data, --hex and --file.
type dataFlags struct {
	text, hexs, file string
}

func (d *dataFlags) register(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.StringVar(&d.text, "data", "", what+" as text")
	f.StringVar(&d.hexs, "hex", "", what+" as hex")
	f.StringVar(&d.file, "file", "", what+": the contents of a file (- for stdin)")
}

func (d *dataFlags) bytes(cmd *cobra.Command) ([]byte, error) {
	set := 0
	for _, n := range []string{"data", "hex", "file"} {
		if cmd.Flags().Changed(n) {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("give exactly one of --data, --hex or --file")
	}
	switch {
	case cmd.Flags().Changed("data"):
		return []byte(d.text), nil
	case cmd.Flags().Changed("hex"):
		b, err := hex.DecodeString(d.hexs)
		if err != nil {
			return nil, fmt.Errorf("--hex: %v", err)
		}
		return b, nil
	}
	if d.file == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	b, err := os.ReadFile(d.file)
	if err != nil {
		return nil, fmt.Errorf("--file: %v", err)
	}
	return b, nil
}

func newReadCmd(gl *globalFlags) *cobra.Command {
	var offset, length int
	cmd := blockCmd(&cobra.Command{
		Use:   "read <block>",
		Short: "Read a block (or --length bytes at --offset)",
	}, func(cmd *cobra.Command, b uint64) error {
		return runOps(cmd, gl, []msg.Op{{Kind: msg.OpRead, Block: b, Offset: offset, Length: length}})
	})
	cmd.Flags().IntVar(&offset, "offset", 0, "first byte to read")
	cmd.Flags().IntVar(&length, "length", 0, "bytes to read (0: to the end of the block)")
	return cmd
}

func newWriteCmd(gl *globalFlags) *cobra.Command {
	var offset int
	var d dataFlags
	cmd := blockCmd(&cobra.Command{
		Use:   "write <block> (--data TEXT | --hex HEX | --file PATH)",
		Short: "Write bytes into a block at --offset",
	}, func(cmd *cobra.Command, b uint64) error {
		data, err := d.bytes(cmd)
		if err != nil {
			return err
		}
		return runOps(cmd, gl, []msg.Op{{Kind: msg.OpWrite, Block: b, Offset: offset, Data: data}})
	})
	cmd.Flags().IntVar(&offset, "offset", 0, "where in the block to write")
	d.register(cmd, "bytes to write")
	return cmd
}

func newRMWCmd(gl *globalFlags) *cobra.Command {
	var (
		op, expect, expectHex string
		offset                int
		delta                 int64
		d                     dataFlags
	)
	cmd := blockCmd(&cobra.Command{
		Use:   "rmw <block> --op xor|add|cas",
		Short: "Atomic read-modify-write: xor bytes, add to a counter, or compare-and-swap",
		Long: `rmw runs one atomic read-modify-write operation on a block:

  --op xor  (--data|--hex|--file)            xor bytes into the block at --offset
  --op add  --delta N                        add N to the little-endian uint64 at --offset; prints the new value
  --op cas  (--expect|--expect-hex) (--data|--hex|--file)
                                             write the new bytes at --offset if the old ones match;
                                             prints whether it swapped and the old bytes`,
	}, func(cmd *cobra.Command, b uint64) error {
		var err error
		o := msg.Op{Block: b, Offset: offset}
		fl := cmd.Flags()
		switch op {
		case "xor":
			o.Kind = msg.OpXor
			if o.Data, err = d.bytes(cmd); err != nil {
				return err
			}
		case "add":
			o.Kind = msg.OpAdd
			if !fl.Changed("delta") {
				return errors.New("--op add needs --delta")
			}
			for _, name := range []string{"data", "hex", "file"} {
				if fl.Changed(name) {
					return fmt.Errorf("--%s does not go with --op add (it adds --delta)", name)
				}
			}
			o.Delta = uint64(delta)
		case "cas":
			o.Kind = msg.OpCas
			if o.Data, err = d.bytes(cmd); err != nil {
				return err
			}
			var e, h *string
			if fl.Changed("expect") {
				e = &expect
			}
			if fl.Changed("expect-hex") {
				h = &expectHex
			}
			if o.Expect, err = bytesArg(e, h, "--expect"); err != nil {
				return err
			}
			if len(o.Expect) == 0 {
				return errors.New("--op cas needs --expect or --expect-hex")
			}
		default:
			return fmt.Errorf("--op must be xor, add or cas, got %q", op)
		}
		if op != "add" && fl.Changed("delta") {
			return fmt.Errorf("--delta only goes with --op add")
		}
		if op != "cas" && (fl.Changed("expect") || fl.Changed("expect-hex")) {
			return fmt.Errorf("--expect only goes with --op cas")
		}
		return runOps(cmd, gl, []msg.Op{o})
	})
	f := cmd.Flags()
	f.StringVar(&op, "op", "", "xor, add or cas")
	f.IntVar(&offset, "offset", 0, "where in the block")
	f.Int64Var(&delta, "delta", 0, "add: the addend (may be negative)")
	f.StringVar(&expect, "expect", "", "cas: expected bytes as text")
	f.StringVar(&expectHex, "expect-hex", "", "cas: expected bytes as hex")
	d.register(cmd, "xor/cas: the bytes")
	_ = cmd.RegisterFlagCompletionFunc("op", cobra.FixedCompletions([]string{"xor", "add", "cas"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newTxnCmd(gl *globalFlags) *cobra.Command {
	var specs []string
	var file string
	cmd := &cobra.Command{
		Use:   "txn (--op SPEC ... | --file OPS.json)",
		Short: "Run several operations on blocks of one shard as one atomic transaction",
		Long: `txn runs operations on blocks of one shard atomically, in order: a later
operation sees the effect of an earlier one, and if a check fails nothing is
applied. Give the operations as repeated --op flags,

  --op 'kind:key=value,...'   kind: read, write, xor, add, cas, check
                              keys: block, offset, length, data, hex, expect, expect_hex, delta

for example

  amalgam-cli txn --op check:block=0,expect=v1 --op write:block=0,data=v2 --op add:block=3,delta=1

or as a JSON file holding an array of objects with the same keys and "op":

  [{"op": "write", "block": 0, "data": "v2"}, {"op": "add", "block": 3, "offset": 8, "delta": 1}]

Operations spanning shards are refused (see amalgam-cli layout).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ops []msg.Op
			switch {
			case len(specs) > 0 && file != "":
				return errors.New("give operations as --op flags or --file, not both")
			case file != "":
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("--file: %v", err)
				}
				if ops, err = parseTxnJSON(b); err != nil {
					return fmt.Errorf("--file %s: %v", file, err)
				}
			case len(specs) > 0:
				for _, s := range specs {
					op, err := parseOpSpec(s)
					if err != nil {
						return err
					}
					ops = append(ops, op)
				}
			default:
				return errors.New("give at least one --op, or --file")
			}
			return runOps(cmd, gl, ops)
		},
	}
	cmd.Flags().StringArrayVar(&specs, "op", nil, "an operation: kind:key=value,... (repeatable)")
	cmd.Flags().StringVar(&file, "file", "", "JSON file with an array of operations")
	return cmd
}
