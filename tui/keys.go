package tui

import (
	"slices"

	"charm.land/bubbles/v2/key"
)

// keyMap holds every binding of design.md §4. The footer and the help screen
// render from it, so what is shown is what is bound.
type keyMap struct {
	// remote is an SSH screen's: n only says tokens are minted at the
	// console's terminal, so the footer does not offer it.
	remote   bool
	Approve  key.Binding
	Scoped   key.Binding
	Grants   key.Binding
	Deny     key.Binding
	TakeOver key.Binding
	Resume   key.Binding
	Cancel   key.Binding
	Unfreeze key.Binding
	Keep     key.Binding
	Mint     key.Binding
	Prompt   key.Binding
	Oldest   key.Binding
	NextConv key.Binding
	PrevConv key.Binding
	Down     key.Binding
	Up       key.Binding
	Details  key.Binding
	ScrollDn key.Binding
	ScrollUp key.Binding
	PageDn   key.Binding
	PageUp   key.Binding
	Dismiss  key.Binding
	Help     key.Binding
	Quit     key.Binding
	ForceQ   key.Binding
	Yes      key.Binding
	// PageView and PageType are handled by pageKey (pageview.go); they
	// are here for the help screen.
	PageView key.Binding
	PageType key.Binding
	PageText key.Binding
	// Revoke (X in the G and n panels) and TextScroll ([ and ] in the
	// page text) are handled where they apply; here for the help screen.
	Revoke     key.Binding
	TextScroll key.Binding
}

func defaultKeyMap() keyMap {
	return keyMap{
		Approve:  key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Scoped:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "for a while")),
		Grants:   key.NewBinding(key.WithKeys("G"), key.WithHelp("G", "grants")),
		Deny:     key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "deny")),
		TakeOver: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "take over")),
		Resume:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "resume")),
		Cancel:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "stop")),
		Unfreeze: key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "clear freeze")),
		Keep:     key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "keep tabs")),
		Mint:     key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "tokens")),
		Prompt:   key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "new task")),
		Oldest:   key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "next review")),
		NextConv: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next conv")),
		PrevConv: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev conv")),
		Down:     key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "next tab")),
		Up:       key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "prev tab")),
		Details:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		ScrollDn: key.NewBinding(key.WithKeys("j"), key.WithHelp("j", "scroll down")),
		ScrollUp: key.NewBinding(key.WithKeys("k"), key.WithHelp("k", "scroll up")),
		PageDn:   key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		Dismiss:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close panel")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQ:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Yes:      key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes")),
		PageView: key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "page")),
		PageType: key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "type")),
		PageText: key.NewBinding(key.WithKeys("V"), key.WithHelp("V", "text")),
		Revoke:   key.NewBinding(key.WithKeys("X"), key.WithHelp("X", "revoke")),
		// "[" alone: the help shows the pair.
		TextScroll: key.NewBinding(key.WithKeys("["), key.WithHelp("[ ]", "scroll")),
	}
}

// ShortHelp is the one-line footer for a terminal at least wideFrom
// columns wide. Unfreeze and Keep are left out; a frozen or ended
// conversation's own line in the inventory names its key. Prompt shows
// only when enabled (the console can start tasks).
func (k keyMap) ShortHelp() []key.Binding {
	b := []key.Binding{k.Approve, k.Deny, k.TakeOver, k.Resume, k.Cancel, k.Mint, k.Prompt, k.Oldest, k.NextConv, k.Details, k.Help, k.Quit}
	if k.remote {
		b = slices.DeleteFunc(b, func(x key.Binding) bool { return x.Help().Key == "n" })
	}
	return b
}

// wideFooter is the width from which the footer has room for every
// ShortHelp binding with its full label.
const wideFooter = 124

// wideFrom is wideFooter, plus room for "p new task" when it shows.
func (k keyMap) wideFrom() int {
	if k.Prompt.Enabled() {
		return wideFooter + len("p new task  ")
	}
	return wideFooter
}

// NarrowHelp is the footer below wideFrom columns, within 80: short
// labels, and no a/d, which every review panel shows on its own last line.
// When the console can start tasks, "p task" takes the place of "n
// tokens" (still on the ? screen): a console running the built-in agent
// is given tasks more often than it mints tokens.
func (k keyMap) NarrowHelp() []key.Binding {
	short := func(b key.Binding, label string) key.Binding {
		return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, label))
	}
	agents := k.Mint
	if k.Prompt.Enabled() {
		agents = short(k.Prompt, "task")
	}
	b := []key.Binding{
		short(k.TakeOver, "take"), k.Resume, short(k.Cancel, "stop"), agents, short(k.Oldest, "next"),
		short(k.NextConv, "conv"), key.NewBinding(key.WithKeys("enter"), key.WithHelp("↵", "details")), k.Help, k.Quit,
	}
	if k.remote {
		b = slices.DeleteFunc(b, func(x key.Binding) bool { return x.Help().Key == "n" })
	}
	return b
}

// narrowDrops is the order in which the narrow footer drops whole keys
// when even it is too wide (the page view's side of a 120-column screen
// leaves the rest 60): ↵ details, g next, the agents' key (p task or n
// tokens), tab conv, x stop, r resume, t take, q quit. Each is still on
// the ? screen, which stays; the first to go are those another part of
// the screen names (the queue, the inventory), the last those a take-over
// needs. A key is never cut (issue 25).
var narrowDrops = []string{"enter", "g", "p", "n", "tab", "x", "r", "t", "q"}

// fitKeys is b without the narrowDrops keys, taken in order, that keep it
// wider than w by measure.
func fitKeys(b []key.Binding, w int, measure func([]key.Binding) int) []key.Binding {
	for _, drop := range narrowDrops {
		if measure(b) <= w {
			break
		}
		b = slices.DeleteFunc(slices.Clone(b), func(x key.Binding) bool { return slices.Contains(x.Keys(), drop) })
	}
	return b
}

// FullHelp is the `?` screen, one column per concern.
// An SSH screen's leaves out n, which mints only at the console's own
// terminal; p shows only where the console can start tasks (its binding
// is disabled elsewhere, and the help skips it).
func (k keyMap) FullHelp() [][]key.Binding {
	agents := []key.Binding{k.TakeOver, k.Resume, k.Cancel, k.Unfreeze, k.Keep, k.Mint, k.Prompt, k.Dismiss}
	if k.remote {
		agents = slices.DeleteFunc(agents, func(x key.Binding) bool { return x.Help().Key == "n" })
	}
	return [][]key.Binding{
		{k.Approve, k.Scoped, k.Deny, k.ScrollDn, k.ScrollUp, k.PageDn, k.PageUp},
		agents,
		{k.Oldest, k.Grants, k.Revoke, k.NextConv, k.PrevConv, k.Down, k.Up, k.Details},
		{k.Help, k.Quit, k.ForceQ, k.PageView, k.PageText, k.TextScroll, k.PageType},
	}
}
