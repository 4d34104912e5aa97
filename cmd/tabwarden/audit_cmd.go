package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// pipeWidth is the table width when stdout is not a terminal: wide enough
// for every column, narrow enough for a code review diff.
const pipeWidth = 100

func newAuditCmd(o *options, s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "audit [FILE]",
		Short: "Print an audit log as a readable table (default: today's log)",
		Long: `audit prints the JSONL audit log (DESIGN §9) as a table sized to the
terminal. Without FILE it reads --audit, else today's log in
$XDG_STATE_HOME/tabwarden/.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := o.audit
			if len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				path = audit.DefaultPath(time.Now())
			}
			if path == "" {
				return failure(errors.New("audit: no home directory to find the default log in; pass FILE"))
			}
			recs, err := audit.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				return failure(fmt.Errorf("audit: no log at %s (nothing recorded yet?)", path))
			}
			if err != nil && recs == nil {
				return failure(err)
			}
			if err != nil {
				// A torn last line is what a crash leaves; the records
				// before it are still the truth, so show them and say so.
				slog.Warn("audit: skipped unreadable lines", "file", path, "err", err)
			}
			if len(recs) == 0 {
				fmt.Fprintf(s.out, "No records in %s.\n", path)
				return nil
			}
			if err := audit.RenderTable(s.out, recs, outputWidth(s)); err != nil {
				return failure(err)
			}
			return nil
		},
	}
}

// outputWidth is the terminal's width when stdout is one, else pipeWidth.
func outputWidth(s streams) int {
	f, ok := s.out.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return pipeWidth
	}
	if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
		return w
	}
	return pipeWidth
}
