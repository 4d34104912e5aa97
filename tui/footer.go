package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
)

// footer is the flash line (or the quit question) above the key help.
type footer struct {
	flash    string
	confirm  bool
	showHelp bool
	help     help.Model
	keys     keyMap
	st       styles
	// prompt, when set, is the open task prompt's line; it takes the
	// flash line's place.
	prompt string
}

func (f footer) Render(w, h int) string { return block(f.lines(w), w, h) }

func (f footer) lines(w int) []string {
	line := ""
	switch {
	case f.prompt != "":
		line = trunc(f.prompt, w)
	case f.confirm:
		line = f.st.flash.Render(trunc(quitPrompt, w))
	case f.flash != "":
		line = f.st.flash.Render(trunc(f.flash, w))
	}
	hm := f.help
	hm.SetWidth(w)
	short := f.keys.ShortHelp()
	if w < f.keys.wideFrom() {
		short = f.keys.NarrowHelp()
	}
	text := hm.ShortHelpView(short)
	if f.showHelp {
		text = hm.FullHelpView(f.keys.FullHelp())
	}
	return append([]string{line}, strings.Split(text, "\n")...)
}
