package main

import (
	"fmt"
	"io"

	"github.com/amalgam-store/amalgam/online"
)

// onlineSummary is what mc online prints at the end (--output json: this
// document).
type onlineSummary struct {
	Rounds    int           `json:"rounds"`
	Cuts      int           `json:"cuts"`
	States    int           `json:"states"`
	NotACut   int           `json:"not_a_cut"`
	Dropped   int           `json:"dropped"`
	Same      int           `json:"same"`
	Predicted []onlineFound `json:"predicted"`
	// Steering, with --steer only.
	Installed *int `json:"filters_installed,omitempty"`
	Unsteered *int `json:"not_steered,omitempty"`
}

// onlineFound is a predicted violation: depth events from the saved cut
// (0: the cut itself violates it), the trace in trace_file.
type onlineFound struct {
	mcViolation
	Depth int    `json:"depth"`
	Cut   string `json:"cut,omitempty"`
}

func summarizeOnline(rep *online.Report, steer bool) onlineSummary {
	s := onlineSummary{Rounds: rep.Pulled, Cuts: len(rep.States), NotACut: rep.Rejected, Dropped: rep.Dropped, Same: rep.Same, Predicted: []onlineFound{}}
	for _, n := range rep.States {
		s.States += n
	}
	for _, f := range rep.Found {
		s.Predicted = append(s.Predicted, onlineFound{Depth: f.Depth, Cut: f.Cut,
			mcViolation: mcViolation{Predicate: f.Predicate, Explanation: f.Explanation, TraceLength: f.Depth, TraceFile: f.Trace}})
	}
	if steer {
		installed, unsteered := len(rep.Installed), rep.Unsteered
		s.Installed, s.Unsteered = &installed, &unsteered
	}
	return s
}

func printOnline(w io.Writer, s onlineSummary) {
	fmt.Fprintf(w, "%d snapshot rounds: %d cuts searched (%d states), %d the same as the last one searched, %d not a cut, %d dropped; %d violations predicted\n",
		s.Rounds, s.Cuts, s.States, s.Same, s.NotACut, s.Dropped, len(s.Predicted))
	if s.Installed != nil {
		fmt.Fprintf(w, "steering: %d filters installed, %d predictions not steered\n", *s.Installed, *s.Unsteered)
	}
	for _, f := range s.Predicted {
		fmt.Fprintf(w, "predicted %q in %d events: cut %s, trace %s\n", f.Predicate, f.Depth, f.Cut, f.TraceFile)
	}
}
