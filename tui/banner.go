package tui

import (
	"fmt"
)

// takeOverText is what the operator reads while a conversation is paused.
const takeOverText = "You have the browser. Sign in or finish the step in the Chromium window, then press r to resume."

// headlessTakeOverText is takeOverText for a console whose Chromium has no
// window: the agent is stopped, but nothing here shows the page.
const headlessTakeOverText = "The agent is stopped. This console's Chromium is headless, so there is no window to finish the step in: press r to hand the browser back (its navigation grants start over), or x to cancel the agent's operation. To sign in by hand, run the console headed (ssh -X, or xvfb-run with a VNC viewer)."

// noTabTakeOverText is the take-over text of a conversation with no tab:
// pointing at a window or v would send the operator to an empty page.
const noTabTakeOverText = "The agent is stopped. This conversation has no tab open, so there is no page to finish a step in: press r to hand the browser back, or x to cancel the agent's operation."

// banner is the take-over notice for the selected conversation.
type banner struct {
	conv     string
	headless bool
	// pageView: the screen has the page view, so the step can be done
	// from the terminal (design.md §13).
	pageView bool
	// noTab: the conversation has no tab, so there is no page to see or
	// finish a step in (its navigation was denied, say).
	noTab bool
	// by is the operator who took over when that is not this screen's.
	by string
	// note is the console's own word on this take-over
	// (ConversationState.PauseNote); it replaces the generic text, which
	// cannot know that, say, the sign-in was already done for the operator.
	note string
	st   styles
}

func (b banner) Render(w, h int) string { return block(b.lines(w), w, h) }

func (b banner) lines(w int) []string {
	out := []string{}
	text := "PAUSED (" + b.conv + "): " + takeOverText
	if b.headless {
		text = "PAUSED (" + b.conv + "): " + headlessTakeOverText
	}
	if b.pageView {
		text = "PAUSED (" + b.conv + "): " + pageTakeOverText
		if b.headless {
			text = "PAUSED (" + b.conv + "): " + pageHeadlessTakeOverText
		}
	}
	if b.noTab {
		text = "PAUSED (" + b.conv + "): " + noTabTakeOverText
	}
	if b.note != "" {
		text = "PAUSED (" + b.conv + "): " + b.note
	}
	if b.by != "" {
		text = "PAUSED (" + b.conv + ") by " + b.by + ": " + b.by + " has the browser. Press r twice to resume it yourself."
	}
	for _, l := range wrap(text, w-2) {
		out = append(out, b.st.banner.Render(padRight(" "+l, w)))
	}
	return out
}

// narrowestPanel is a width no panel is drawn narrower than.
const narrowestPanel = 20

// tokenPanel is the `n` panel's state: the live tokens, the hosts a token
// can be minted for, the selected token and the one just minted.
type tokenPanel struct {
	names  []string
	hosts  []string
	sel    int
	minted *MintedToken
	// mintedFor is the host minted is configured for.
	mintedFor string
	// scroll is how many rows of a cut configuration ↓ has passed, so a
	// small screen can still show (and copy) its last lines.
	scroll int
	// revoking is the token X asked to revoke, waiting for y: a revoked
	// token is gone for good and its conversations end.
	revoking string
}

// tokenBox draws the token panel. A minted configuration is shown whole:
// lines longer than the panel continue on the next row, cut between
// characters, never between words it would then lose; the clipboard copy
// (OSC 52) has it as one piece.
type tokenBox struct {
	p  tokenPanel
	st styles
	// pageOn: the page view takes room that v would give back.
	pageOn bool
}

func (t tokenBox) Render(w, h int) string {
	lines := t.lines(w)
	if t.p.minted != nil && len(lines) > h && h >= 3 {
		// The title stays; ↑↓ move the rest, so every line of the
		// configuration can be brought on screen.
		body, rows := lines[1:], h-2
		off := min(max(t.p.scroll, 0), len(body)-rows)
		hint := fmt.Sprintf("lines %d-%d of %d · ↑↓ scroll", off+1, off+rows, len(body))
		if t.pageOn {
			hint += " · v hides the page view"
		}
		out := append([]string{lines[0]}, body[off:off+rows]...)
		return block(append(out, t.st.dim.Render(trunc(hint, w))), w, h)
	}
	if len(lines) > h && h >= 2 {
		// Cut for room (a review and the page view share a small
		// screen): say so rather than end mid-list or mid-config.
		more := len(lines) - (h - 1)
		room := ": more room on a taller terminal"
		if t.pageOn {
			room = ": v hides the page view"
		}
		lines = append(lines[:h-1:h-1], t.st.dim.Render(trunc("… "+countOf(more, "more line")+room, w)))
	}
	return block(lines, w, h)
}

func (t tokenBox) lines(w int) []string {
	if t.p.minted != nil {
		// The configuration alone, so a small screen shows it whole; esc
		// goes back to the list.
		return t.mintedLines(w)
	}
	out := []string{t.st.review.Render(rule("Agent tokens (esc closes)", w, "═"))}
	if len(t.p.names) == 0 {
		out = append(out, "  no live tokens")
	}
	for i, n := range t.p.names {
		mark := "  "
		if i == t.p.sel {
			mark = "▸ "
		}
		out = append(out, trunc(mark+clean(n), w))
	}
	var hosts []string
	for i, h := range t.p.hosts {
		hosts = append(hosts, fmt.Sprintf("%d %s", i+1, clean(h)))
	}
	// Wrapped between entries, never inside one ("5" / "cursor").
	line := "new token for:"
	for i, h := range hosts {
		sep := "  "
		if i == 0 {
			sep = " "
		}
		if i > 0 && width(line)+len(sep)+width(h) > w {
			out = append(out, trunc(line, w))
			line, sep = "", "  "
		}
		line += sep + h
	}
	out = append(out, trunc(line, w))
	if t.p.revoking != "" {
		return append(out, wrap(t.st.warn.Render("revoke "+clean(t.p.revoking)+" for good? its conversations end (y/n)"), w)...)
	}
	return append(out, wrap("↑↓ select · X revoke the selected token (its conversations end)", w)...)
}

// mintedLines is the panel showing the configuration just minted.
func (t tokenBox) mintedLines(w int) []string {
	var out []string
	if m := t.p.minted; m != nil {
		out = append(out, t.st.review.Render(rule("Token "+clean(m.Name)+": "+clean(m.Where)+" (esc: the list)", w, "═")))
		var config []string
		cut := false
		for _, l := range splitLines(cleanBlock(m.Config)) {
			rows := chunk(l, w)
			cut = cut || len(rows) > 1
			config = append(config, rows...)
		}
		if cut {
			// Copying cut rows from the screen pastes line breaks inside
			// the token; say where a whole copy is.
			for _, l := range wrap("Long lines are split across rows, mid-word: a copy off the screen breaks them. Paste from the clipboard, or widen the terminal; `tabwarden connect "+clean(t.p.mintedFor)+"` in a shell prints a new token's configuration whole.", w) {
				out = append(out, t.st.dim.Render(l))
			}
		}
		out = append(out, config...)
	}
	return out
}

// chunk cuts s into pieces of at most w cells, keeping every character.
func chunk(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	var out []string
	r := []rune(s)
	for len(r) > w {
		out = append(out, string(r[:w]))
		r = r[w:]
	}
	return append(out, string(r))
}
