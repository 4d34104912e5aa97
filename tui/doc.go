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
//   - A review's origin is shown in full (scheme, host, port; decoded and raw
//     when they differ) on one line. When it does not fit beside its label
//     it gets a line of its own; when it does not fit the wide layout's
//     review column the screen falls back to one full-width column; other
//     fields are truncated instead. Only an origin wider than the whole
//     terminal is broken, into full-width pieces, never cut.
//   - Site-derived text is stripped of control and bidi characters before it
//     reaches the terminal, so a page cannot forge screen content or
//     reorder an origin.
//   - One root model (Model); components are plain structs with
//     Render(width, height); no state is mutated inside a tea.Cmd.
//
// Decisions where design.md is silent:
//   - Operator tabs are listed but are not selection stops: selecting decides
//     which conversation is visible, and operator tabs belong to none.
//   - up/down step through every tab of every conversation; tab/shift+tab
//     jump between conversations and let the engine pick the tab (the one
//     with the oldest pending review).
//   - Every queued review other than the one on screen is marked "needs
//     attention": it waits for the operator to select its tab.
//   - Confirming quit (y, or ctrl+c again) cancels every live conversation's
//     running operation and pending reviews before the program exits; any
//     other key answers no, so a stray `a` cannot approve while the
//     question is open.
//   - The review body ("what will happen") scrolls with j/k/pgup/pgdn for
//     every kind, not only disclosure, so a 20-step plan or 8000 characters
//     of text to enter are shown whole at 80×24.
//   - A frozen conversation (its agent lost a batch submit's answer) carries
//     [frozen] and a line naming the job under its name; `u` clears the
//     selected conversation's freeze, and only one the screen shows.
//   - The screen is 80×24-safe below 120 columns (one column, review first)
//     and splits inventory left / review and queue right from 120 up.
//   - Space goes to the review's own lines first and never takes its keys
//     line. Then, with a review on screen, other waiting reviews, then the
//     activity log (where an agent says why it asks, and the demo tells a
//     newcomer what to press), while the inventory keeps its heading and
//     the selected tab; without a review, queue and inventory come first.
//     In the wide layout the log takes every line the columns above do
//     not use, and at least a quarter of the body.
//   - Text wraps only at spaces (one wrapper for prose and verbatim text),
//     so a hyphenated user name or origin is never split across lines.
//   - Blank, quiet operator tabs (each Chromium starts with one) fold into a
//     "N blank tabs" count line; an operator tab on a page, or with a badge,
//     is listed on its own.
//   - A navigation review says where the tab stays while it waits: about:blank
//     only for a blank tab, otherwise the origin of the page it shows.
package tui
