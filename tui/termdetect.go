package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// PageProtocol is how the page view draws its picture (design.md §13).
type PageProtocol string

// The page view's protocols. PageAuto asks the terminal (each screen its
// own: the console's terminal and every SSH client's).
const (
	PageAuto      PageProtocol = "auto"
	PageHalfBlock PageProtocol = "halfblock"
	PageKitty     PageProtocol = "kitty"
	PageSixel     PageProtocol = "sixel"
	PageITerm2    PageProtocol = "iterm2"
)

// PageProtocols lists the values ParsePageProtocol accepts, for help text.
var PageProtocols = []PageProtocol{PageAuto, PageHalfBlock, PageKitty, PageSixel, PageITerm2}

// ParsePageProtocol reads a --page-view value; "" is auto.
func ParsePageProtocol(s string) (PageProtocol, error) {
	if s == "" {
		return PageAuto, nil
	}
	if p := PageProtocol(s); slices.Contains(PageProtocols, p) {
		return p, nil
	}
	return "", fmt.Errorf("use auto, halfblock, kitty, sixel or iterm2")
}

const (
	// kittyQueryID is the image id of the kitty graphics query: a kitty
	// terminal answers it with OK, any other ignores it.
	kittyQueryID = 31
	// detectTimeout ends detection on a terminal that never answers DA1
	// (every terminal does; a pipe or a broken client may not): half-blocks.
	detectTimeout = 2 * time.Second
	// defaultCellW×defaultCellH is the cell size in pixels assumed when the
	// terminal does not report it (CSI 16 t): small, so a sixel picture
	// rather falls short of its panel than spills over the screen.
	defaultCellW, defaultCellH = 7, 14
)

// termQueries asks, in order: kitty graphics (answered only by kitty-protocol
// terminals), XTVERSION (the terminal's name: iTerm2, tmux, …), the cell
// size in pixels (for sixel), and DA1 last: every terminal answers DA1, and
// terminals answer in order, so its reply ends detection.
var termQueries = ansi.KittyGraphics([]byte("AAAA"), fmt.Sprintf("i=%d", kittyQueryID), "s=1", "v=1", "a=q", "t=d", "f=24") +
	ansi.RequestNameVersion + "\x1b[16t" + ansi.RequestPrimaryDeviceAttributes

// termDetect is a screen's knowledge of its terminal (a value in Model;
// only Update changes it).
type termDetect struct {
	// proto is the protocol the page view draws with; "" until detection
	// ends (half-blocks meanwhile).
	proto     PageProtocol
	detecting bool
	started   bool
	kitty     bool
	sixel     bool
	iterm     bool
	// muxed: the terminal is tmux or screen (by TERM/TMUX or XTVERSION).
	muxed bool
	// noPlaceholders: a terminal that answers the kitty query but draws no
	// Unicode placeholders (WezTerm, Konsole).
	noPlaceholders bool
	cellW, cellH   int
}

type detectDeadlineMsg struct{}

// pageProto is the protocol the panel draws with now.
func (m Model) pageProto() PageProtocol {
	switch p := m.opts.PageProtocol; p {
	case PageHalfBlock, PageKitty, PageSixel, PageITerm2:
		return p
	}
	if m.term.proto == "" {
		return PageHalfBlock
	}
	return m.term.proto
}

// cellSize is the terminal's cell size in pixels, reported or assumed.
func (m Model) cellSize() (int, int) {
	if m.term.cellW > 0 && m.term.cellH > 0 {
		return m.term.cellW, m.term.cellH
	}
	return defaultCellW, defaultCellH
}

// muxedEnv reports whether environ is inside tmux or GNU screen.
func muxedEnv(env tea.EnvMsg) bool {
	term := env.Getenv("TERM")
	return env.Getenv("TMUX") != "" || strings.HasPrefix(term, "tmux") || strings.HasPrefix(term, "screen")
}

// detectUpdate handles the terminal's replies; it reports whether msg was
// one. Detection starts on the program's EnvMsg (sent once at start, with
// the environment of this screen's terminal: the console's, or the SSH
// session's), so a screen under tmux asks nothing: tmux answers DA1 for
// itself and drops images unless passthrough is set up, so it gets
// half-blocks unless --page-view says otherwise.
func (m *Model) detectUpdate(msg tea.Msg) (tea.Cmd, bool) {
	d := &m.term
	switch msg := msg.(type) {
	case tea.EnvMsg:
		if d.started {
			return nil, false
		}
		d.started = true
		if m.opts.Page == nil {
			return nil, false // no page view (--script): nothing to ask
		}
		if p := m.opts.PageProtocol; p != "" && p != PageAuto && slices.Contains(PageProtocols, p) {
			// Forced: only the cell size is asked (for sixel); a terminal
			// that ignores the query is no worse off.
			return tea.Raw("\x1b[16t"), false
		}
		if muxedEnv(msg) {
			d.muxed = true
			d.proto = PageHalfBlock
			return nil, false
		}
		d.detecting = true
		return tea.Batch(tea.Raw(termQueries), tea.Tick(detectTimeout, func(time.Time) tea.Msg { return detectDeadlineMsg{} })), false
	case uv.KittyGraphicsEvent:
		if msg.Options.ID == kittyQueryID && strings.HasPrefix(string(msg.Payload), "OK") {
			d.kitty = true
		}
		return nil, true
	case tea.TerminalVersionMsg:
		name := strings.ToLower(msg.Name)
		switch {
		case strings.HasPrefix(name, "tmux") || strings.HasPrefix(name, "screen"):
			d.muxed = true
		case strings.HasPrefix(name, "iterm2"):
			d.iterm = true
		case strings.HasPrefix(name, "wezterm"):
			// WezTerm answers the kitty query but draws no placeholders;
			// it shows iTerm2 images.
			d.iterm, d.noPlaceholders = true, true
		case strings.HasPrefix(name, "konsole"):
			d.noPlaceholders = true
		}
		return nil, true
	case uv.CellSizeEvent:
		if msg.Width > 0 && msg.Height > 0 {
			d.cellW, d.cellH = msg.Width, msg.Height
		}
		return nil, true
	case uv.PrimaryDeviceAttributesEvent:
		d.sixel = slices.Contains([]int(msg), 4)
		return m.endDetect(), true
	case detectDeadlineMsg:
		return m.endDetect(), true
	}
	return nil, false
}

// endDetect picks the protocol from the replies so far: kitty, iTerm2,
// sixel, half-blocks, in that order; half-blocks under tmux or screen. It
// repaints the screen once: a terminal that printed a query it did not
// understand (the Linux console shows an APC as text) is left clean.
func (m *Model) endDetect() tea.Cmd {
	d := &m.term
	if !d.detecting {
		return nil
	}
	d.detecting = false
	switch {
	case d.muxed:
		d.proto = PageHalfBlock
	case d.kitty && !d.noPlaceholders:
		d.proto = PageKitty
	case d.iterm:
		d.proto = PageITerm2
	case d.sixel:
		d.proto = PageSixel
	default:
		d.proto = PageHalfBlock
	}
	return tea.ClearScreen
}
