package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// recordRun writes the run_start record that marks where this run begins in
// an audit log several runs append to, and returns the function that writes
// its run_stop; `tabwarden audit` shows both, so a reader can tell one run's
// records from the next run's.
func recordRun(log audit.Sink, what string, o *options) (stop func(err error)) {
	write := func(kind audit.Kind, note string) {
		if err := log.Write(audit.Record{Kind: kind, Note: note}); err != nil {
			slog.Error("audit write failed", "kind", kind, "err", err)
		}
	}
	write(audit.KindRunStart, fmt.Sprintf("%s %s started (pid %d, consent %s)", what, version, os.Getpid(), o.consent))
	return func(err error) {
		note := what + " stopped"
		if err != nil {
			note += ": " + err.Error()
		}
		write(audit.KindRunStop, note)
	}
}
