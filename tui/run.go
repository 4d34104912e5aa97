package tui

import (
	"context"
	"errors"

	tea "charm.land/bubbletea/v2"
)

// Run shows the operator's screen on the terminal until the operator quits
// (after confirming, which cancels every live conversation's running
// operation and pending reviews) or ctx is done. It returns ctx's error in
// the latter case.
func Run(ctx context.Context, svc Service, opts Options) error {
	m := New(svc, opts)
	defer m.Close()
	_, err := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts.Program...)...).Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return ctx.Err()
	}
	return err
}
