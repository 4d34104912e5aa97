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
	p, closeFn := NewProgram(ctx, svc, opts)
	defer closeFn()
	_, err := p.Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return ctx.Err()
	}
	return err
}

// NewProgram builds the program Run runs, with opts.Program applied, for a
// caller that must also Send to it (an SSH session forwards window
// changes). Call closeFn once the program has ended.
func NewProgram(ctx context.Context, svc Service, opts Options) (p *tea.Program, closeFn func()) {
	m := New(svc, opts)
	p = tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts.Program...)...)
	return p, m.Close
}
