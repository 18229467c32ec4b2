// Package buildinfo reports what a binary was built from: the module
// version, the VCS revision and time, and the Go version.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info describes a build. Revision and Time are "unknown" when the binary
// was built without VCS stamping (go build -buildvcs=false, or outside a
// repository).
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Time     string `json:"time"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

// Read returns the running binary's build information.
func Read() Info {
	i := Info{Version: "(unknown)", Revision: "unknown", Time: "unknown", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	if bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// Line is the one-line form, for example
// "amalgam-cli (devel), revision 0f3c... (modified), committed 2026-11-23T20:00:00Z, go1.26.8".
func (i Info) Line(name string) string {
	if i.Revision == "unknown" {
		return fmt.Sprintf("%s %s, revision unknown (built without VCS stamping), %s", name, i.Version, i.Go)
	}
	mod := ""
	if i.Modified {
		mod = " (modified)"
	}
	return fmt.Sprintf("%s %s, revision %s%s, committed %s, %s", name, i.Version, i.Revision, mod, i.Time, i.Go)
}
