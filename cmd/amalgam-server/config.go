package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// Settings come from, in order of precedence: flags, AMALGAM_* environment
// variables (the flag's name in upper case, dashes as underscores:
// --metrics-addr is AMALGAM_METRICS_ADDR), the YAML file named by --config
// (or AMALGAM_CONFIG), and the defaults. The file's keys are flag names;
// a key may also be a subcommand's name holding settings for it alone:
//
//	log-format: json
//	metrics-addr: 127.0.0.1:9100
//	node:
//	  data-dir: /var/lib/amalgam
//	  reconfig: [10.0.0.1:7400, 10.0.0.2:7400]   # lists join with commas

// envName is the environment variable of flag name.
func envName(flag string) string {
	return "AMALGAM_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applySettings fills every flag of cmd that was not given on the command
// line from the environment, then from the config file.
func applySettings(cmd *cobra.Command, configFile string) error {
	file, err := readConfig(configFile, cmd.Name(), cmd.Root())
	if err != nil {
		return err
	}
	fs := cmd.Flags()
	for key := range file {
		if fs.Lookup(key) == nil || key == "config" {
			return fmt.Errorf("--config %s: unknown key %q (amalgam-server %s has no --%s flag)", configFile, key, cmd.Name(), key)
		}
	}
	type set struct{ name, value, from string }
	var sets []set
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			sets = append(sets, set{f.Name, v, envName(f.Name)})
		} else if v, ok := file[f.Name]; ok {
			sets = append(sets, set{f.Name, v, "--config " + configFile})
		}
	})
	for _, s := range sets { // a bad value stops the command before it runs
		if err := fs.Set(s.name, s.value); err != nil {
			return fmt.Errorf("%s: bad value %q for --%s: %v", s.from, s.value, s.name, err)
		}
	}
	return nil
}

// readConfig reads the YAML file (empty name: none) into flag name ->
// value for subcommand sub: top-level keys, overridden by sub's section.
func readConfig(name, sub string, root *cobra.Command) (map[string]string, error) {
	out := map[string]string{}
	if name == "" {
		return out, nil
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("--config %s: not a YAML mapping of flag names to values: %v", name, oneLine(err))
	}
	sections := map[string]bool{}
	for _, c := range root.Commands() {
		sections[c.Name()] = true
	}
	flat := func(m map[string]yaml.Node, section string) error {
		for k, n := range m {
			if section == "" && sections[k] {
				continue
			}
			v, err := scalar(n)
			if err != nil {
				return fmt.Errorf("--config %s: key %q%s: %v", name, k, section, err)
			}
			out[k] = v
		}
		return nil
	}
	if err := flat(doc, ""); err != nil {
		return nil, err
	}
	if n, ok := doc[sub]; ok {
		var m map[string]yaml.Node
		if err := n.Decode(&m); err != nil {
			return nil, fmt.Errorf("--config %s: section %q is not a mapping of flag names to values", name, sub)
		}
		if err := flat(m, " in section "+sub); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scalar is a YAML value as a flag value: scalars as written, lists of
// scalars joined with commas.
func scalar(n yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		var parts []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("lists may hold only plain values")
			}
			parts = append(parts, c.Value)
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a value or a list of values")
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
