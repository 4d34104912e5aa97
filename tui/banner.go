package tui

// takeOverText is what the operator reads while a conversation is paused.
const takeOverText = "You have the browser. Sign in or finish the step in the Chromium window, then press r to resume."

// headlessTakeOverText is takeOverText for a console whose Chromium has no
// window: the agent is stopped, but nothing here shows the page.
const headlessTakeOverText = "The agent is stopped. This console's Chromium is headless, so there is no window to finish the step in: press r to hand the browser back (its navigation grants start over), or x to cancel the agent's operation. To sign in by hand, run the console headed (ssh -X, or xvfb-run with a VNC viewer)."

// banner is the take-over notice for the selected conversation.
type banner struct {
	conv     string
	headless bool
	// by is the operator who took over when that is not this screen's.
	by string
	st styles
}

func (b banner) Render(w, h int) string { return block(b.lines(w), w, h) }

func (b banner) lines(w int) []string {
	out := []string{}
	text := "PAUSED (" + b.conv + "): " + takeOverText
	if b.headless {
		text = "PAUSED (" + b.conv + "): " + headlessTakeOverText
	}
	if b.by != "" {
		text = "PAUSED (" + b.conv + ") by " + b.by + ": " + b.by + " has the browser. Press r twice to resume it yourself."
	}
	for _, l := range wrap(text, w-2) {
		out = append(out, b.st.banner.Render(padRight(" "+l, w)))
	}
	return out
}

// tokenBox shows a freshly minted agent token's ready-to-paste config until
// the operator closes it with esc.
type tokenBox struct {
	tok MintedToken
	st  styles
}

func (t tokenBox) Render(w, h int) string { return block(t.lines(w), w, h) }

func (t tokenBox) lines(w int) []string {
	out := []string{t.st.review.Render(rule("New agent token: "+clean(t.tok.Name)+" (esc closes)", w, "═"))}
	for _, l := range splitLines(cleanBlock(t.tok.Config)) {
		out = append(out, wrap(l, w)...)
	}
	return out
}
