// Package tui is the operator's screen: a bubbletea program that renders the
// consent engine's state and turns the operator's keypresses into decisions.
//
// Invariants:
//   - The TUI never touches the browser. Everything it shows comes from
//     Service.Snapshot; everything it does goes through a Service method.
//   - Decisions are synchronous Service calls made in Update, so a keypress is
//     never queued, dropped or replayed. The key-ahead guard lives in the
//     engine (Decide returns consent.ErrTooEarly); the TUI only reports it.
//   - Screen refreshes may coalesce: the engine's Changes channel carries one
//     pending signal for any number of changes and the TUI re-reads a whole
//     snapshot after each, so a missed intermediate state is never a bug.
//   - A review's origin is shown in full (scheme, host, port) on a line of
//     its own when needed; other fields are truncated to make room, the
//     origin never is. Site-derived text is stripped of control and bidi
//     characters before it reaches the terminal, so a page cannot forge
//     screen content or reorder the origin.
//   - One root model (Model); components are plain structs rendered by
//     width and height; no state is mutated inside a tea.Cmd.
package tui
