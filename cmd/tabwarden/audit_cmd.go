package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/consent/audit"
)

func newAuditCmd(o *options, s streams) *cobra.Command {
	var (
		asJSON       bool
		conversation string
		since        string
	)
	cmd := &cobra.Command{
		Use:   "audit [FILE]",
		Short: "Print an audit log as a readable table (default: today's log)",
		Long: `audit prints the JSONL audit log (docs/design.md §9) as a table sized to the
terminal, or whole when stdout is a pipe or file. Without FILE it reads
--audit, else today's log in $XDG_STATE_HOME/tabwarden/.

Each run of the console starts with a run_start row and ends with run_stop.
Conversations show their client's name. --json prints the (filtered)
records as JSON lines instead.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return badUsagef("audit reads one log FILE at a time (got %d)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			keep, err := auditFilter(conversation, since, time.Now())
			if err != nil {
				return err
			}
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
			all := len(recs)
			recs = keep(recs)
			if asJSON {
				enc := json.NewEncoder(s.out)
				for _, r := range recs {
					if err := enc.Encode(r); err != nil {
						return failure(err)
					}
				}
				return nil
			}
			if len(recs) == 0 {
				if all > 0 {
					fmt.Fprintf(s.out, "No records match --conversation/--since among the %d in %s.\n", all, path)
				} else {
					fmt.Fprintf(s.out, "No records in %s.\n", path)
				}
				return nil
			}
			if err := audit.RenderTable(s.out, recs, outputWidth(s)); err != nil {
				return failure(err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the records as JSON lines (after the filters)")
	f.StringVar(&conversation, "conversation", "", "only this conversation: its id, or a part of its client name")
	f.StringVar(&since, "since", "", "only records from this long ago (e.g. 90m) or since this time (RFC 3339, e.g. 2026-12-01T09:00:00Z)")
	return cmd
}

// auditFilter turns --conversation and --since into one record filter. A
// conversation matches by id, or by a part of the client name any of its
// records carries, so rows written before the name was known still match.
func auditFilter(conversation, since string, now time.Time) (func([]audit.Record) []audit.Record, error) {
	var from time.Time
	if since != "" {
		if d, err := time.ParseDuration(since); err == nil && d >= 0 {
			from = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339, since); err == nil {
			from = t
		} else {
			return nil, badUsagef("invalid --since '%s': use a duration such as 90m or an RFC 3339 time", since)
		}
	}
	return func(recs []audit.Record) []audit.Record {
		match := map[string]bool{}
		if conversation != "" {
			for _, r := range recs {
				if r.Conversation == conversation || (r.Client != "" && strings.Contains(r.Client, conversation)) {
					match[r.Conversation] = true
				}
			}
		}
		var out []audit.Record
		for _, r := range recs {
			if !from.IsZero() && r.Time.Before(from) {
				continue
			}
			if conversation != "" && !match[r.Conversation] {
				continue
			}
			out = append(out, r)
		}
		return out
	}, nil
}

// outputWidth is the terminal's width when stdout is one; piped or
// redirected, the table is printed whole (0: no limit), never cut.
func outputWidth(s streams) int {
	f, ok := s.out.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return 0
	}
	if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
		return w
	}
	return 0
}
