package main

import (
	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/internal/settings"
)

// Settings come from, in order of precedence: flags, AMALGAM_* environment
// variables, the YAML file named by --config (or AMALGAM_CONFIG), and the
// defaults (package internal/settings). A top-level key of the file named
// after a subcommand holds settings for that subcommand alone.

// applySettings fills every flag of cmd that was not given on the command
// line from the environment, then from the config file.
func applySettings(cmd *cobra.Command, configFile string) error {
	var sections []string
	for _, c := range cmd.Root().Commands() {
		sections = append(sections, c.Name())
	}
	file, err := settings.Read(configFile, cmd.Name(), sections)
	if err != nil {
		return err
	}
	// One file serves every subcommand: a key this command has no flag for
	// but another has (log-format for version, say) is left to that one.
	for key := range file {
		if cmd.Flags().Lookup(key) != nil {
			continue
		}
		for _, c := range cmd.Root().Commands() {
			if c != cmd && c.Flags().Lookup(key) != nil {
				delete(file, key)
				break
			}
		}
	}
	return settings.Apply(cmd.Flags(), file, configFile, "amalgam-server "+cmd.Name())
}
