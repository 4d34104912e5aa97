package tui

import (
	"fmt"
	"strings"
	"sync"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
)

// footer is the flash line (or the quit question) above the key help.
type footer struct {
	flash   string
	confirm bool
	// operators are on SSH screens, which the quit ends too; live: some
	// conversation is live, which it cancels.
	operators []string
	live      bool
	showHelp  bool
	help      help.Model
	keys      keyMap
	st        styles
	// prompt, when set, is the open task prompt's line; it takes the
	// flash line's place.
	prompt string
	// cache keeps the key help already laid out (nil: none).
	cache *helpCache
	// typing: keys go to the page (i in a take-over), so the console's
	// keys do nothing but esc and ctrl+c; the help says that instead.
	typing bool
}

// helpCache keeps the key help's lines by width and help screen: they
// depend on nothing else (a model's keys never change), and laying them
// out is a large part of a frame, which every screen draws after every
// message (ten SSH screens ten times for each change).
type helpCache struct {
	mu    sync.Mutex
	lines map[helpKey][]string
}

type helpKey struct {
	w    int
	full bool
}

func (c *helpCache) get(k helpKey, build func() []string) []string {
	if c == nil {
		return build()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.lines[k]; ok {
		return l
	}
	if c.lines == nil || len(c.lines) >= 16 { // resizes: keep a few
		c.lines = map[helpKey][]string{}
	}
	l := build()
	c.lines[k] = l
	return l
}

func (f footer) Render(w, h int) string { return block(f.lines(w), w, h) }

func (f footer) lines(w int) []string {
	line := ""
	switch {
	case f.prompt != "":
		line = trunc(f.prompt, w)
	case f.confirm && len(f.operators) > 0:
		prompt := quitPromptSSH
		if !f.live {
			prompt = quitPromptOnlySSH
		}
		names := strings.Join(f.operators, ", ") + " (SSH)"
		line = f.st.flash.Render(trunc(firstFit(w, fmt.Sprintf(prompt, names), fmt.Sprintf(prompt, countOf(len(f.operators), "SSH screen")), fmt.Sprintf(quitPromptShort, countOf(len(f.operators), "SSH screen"))), w))
	case f.confirm:
		line = f.st.flash.Render(trunc(quitPrompt, w))
	case f.flash != "":
		line = f.st.flash.Render(trunc(f.flash, w))
	}
	if f.typing {
		quit := "ctrl+c " + f.keys.ForceQ.Help().Desc + "s" // quits, or leaves on an SSH screen
		return []string{line, f.st.banner.Render(trunc(firstFit(w, "TYPING INTO THE PAGE: every key goes to the page  esc stops  "+quit, "TYPING INTO THE PAGE  esc stops  "+quit, "esc stops typing"), w))}
	}
	keys := f.cache.get(helpKey{w: w, full: f.showHelp}, func() []string {
		hm := f.help
		hm.SetWidth(w)
		short := f.keys.ShortHelp()
		if w < f.keys.wideFrom() {
			short = fitKeys(f.keys.NarrowHelp(), w, func(b []key.Binding) int {
				whole := hm
				whole.SetWidth(0) // no limit: measure, never cut
				return width(whole.ShortHelpView(b))
			})
		}
		text := hm.ShortHelpView(short)
		if f.showHelp {
			text = hm.FullHelpView(f.keys.FullHelp())
		}
		return strings.Split(text, "\n")
	})
	return append([]string{line}, keys...)
}
