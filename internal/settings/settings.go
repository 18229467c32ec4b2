// Package settings fills command-line flags from AMALGAM_* environment
// variables and a YAML config file, for amalgam-server and amalgam-cli.
//
// Precedence: flags, then the environment (AMALGAM_ and the flag's name in
// upper case, dashes as underscores: --metrics-addr is
// AMALGAM_METRICS_ADDR), then the file, then the defaults. The file's keys
// are flag names; a key may also name a section (a subcommand) holding
// settings for it alone, and lists join with commas:
//
//	log-format: json
//	metrics-addr: 127.0.0.1:9100
//	node:
//	  data-dir: /var/lib/amalgam
//	  reconfig: [10.0.0.1:7400, 10.0.0.2:7400]
package settings

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// EnvName is the environment variable of flag name.
func EnvName(flag string) string {
	return "AMALGAM_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply fills every flag of fs not given on the command line (and other
// than config and help) from the environment, then from file, the values
// Read took from configFile. A key of file that fs has no flag for is an
// error naming it and what (as in "amalgam-server node"); so is a bad value,
// before anything runs.
func Apply(fs *pflag.FlagSet, file map[string]string, configFile, what string) error {
	keys := make([]string, 0, len(file))
	for key := range file {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if fs.Lookup(key) == nil || key == "config" {
			return fmt.Errorf("--config %s: unknown key %q (%s has no --%s flag)", configFile, key, what, key)
		}
	}
	type set struct{ name, value, from string }
	var sets []set
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			sets = append(sets, set{f.Name, v, EnvName(f.Name)})
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

// Read reads the YAML file name (empty: none) into flag name -> value for
// section sub: the top-level keys, overridden by those in sub's section.
// Top-level keys listed in sections are sections, not settings.
func Read(name, sub string, sections []string) (map[string]string, error) {
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
		return nil, fmt.Errorf("--config %s: not a YAML mapping of flag names to values: %v", name, OneLine(err))
	}
	flat := func(m map[string]yaml.Node, section string) error {
		for k, n := range m {
			if section == "" && slices.Contains(sections, k) {
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
	if n, ok := doc[sub]; ok && slices.Contains(sections, sub) {
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

// OneLine is err's text on one line.
func OneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
