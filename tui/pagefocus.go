package tui

import (
	"context"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tabwarden/tabwarden/consent"
)

// The focus marker: while the operator types into the page (i), the page
// panel says which element the keys reach and outlines it in the picture,
// and the page text (V) marks its line. Without it a sign-in through a
// small half-block picture is blind: the keys of a page with no focused
// field go nowhere and nothing on screen says so (issue 25).

// PageFocusSource is the browser side of the focus marker. Options.Page may
// implement it; without it the panel has no focus line.
type PageFocusSource interface {
	// PageFocus reports the element of tab that has keyboard focus,
	// never its value.
	PageFocus(ctx context.Context, tab consent.TabID) (PageFocus, error)
}

// PageFocus is the element typed keys reach.
type PageFocus struct {
	// Label names it as the page text does ("[textbox] User name"); ""
	// when no element has focus and keys go to the page itself.
	Label string
	// Box is its x, y, width, height in viewport CSS pixels, when HasBox.
	Box    [4]float64
	HasBox bool
}

// pageFocusMsg is a read of a tab's focus. typedAt is pageView.typed when
// it was asked for: the printable keys queued after it reached the element
// it reports.
type pageFocusMsg struct {
	tab     consent.TabID
	focus   PageFocus
	err     error
	typedAt int
	seq     uint64
}

// readFocus runs on the input worker, after the keys queued before it.
func readFocus(ctx context.Context, src PageSource, in pageInput) pageFocusMsg {
	msg := pageFocusMsg{tab: in.tab, typedAt: in.typedAt, seq: in.seq}
	fs, ok := src.(PageFocusSource)
	if !ok {
		return msg
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg.focus, msg.err = fs.PageFocus(cctx, in.tab)
	return msg
}

// showsFocus reports whether the panel shows the focus line: while typing
// into the page of a source that reads focus.
func (m Model) showsFocus() bool {
	if !m.page.on || !m.page.input || m.opts.Page == nil {
		return false
	}
	_, ok := m.opts.Page.(PageFocusSource)
	return ok
}

// readFocus queues a read of the shown tab's focus behind the keys sent so
// far. A read for the clock (poll) is skipped while another waits; one
// after a key that may move the focus (tab, enter, a click) always goes.
func (m *Model) readFocus() tea.Cmd { return m.queueFocus(false) }

func (m *Model) queueFocus(poll bool) tea.Cmd {
	tab := m.pageTab()
	sh := m.pageShared
	if !m.showsFocus() || tab == "" {
		return nil
	}
	if poll && sh.focusQueued.Load() {
		return nil
	}
	sh.focusQueued.Store(true)
	reply := make(chan pageFocusMsg, 1)
	if !sh.send(m.opts.Page, pageInput{tab: tab, focus: reply, typedAt: m.page.typed, seq: sh.focusSeq.Add(1)}) {
		sh.focusQueued.Store(false)
		return nil
	}
	ctx := sh.ctx
	return func() tea.Msg {
		select {
		case msg := <-reply:
			return msg
		case <-ctx.Done():
			return nil
		}
	}
}

// takeFocus takes a read: the newest for the shown tab wins. A new element
// starts its count of typed keys.
func (m *Model) takeFocus(msg pageFocusMsg) {
	if msg.tab != m.pageTab() || msg.seq < m.page.focusSeq {
		return
	}
	m.page.focusSeq = msg.seq
	if msg.err != nil {
		m.page.focusErr = msg.err.Error()
		return
	}
	if m.page.focusTab != msg.tab || msg.focus != m.page.focus {
		m.page.typedFrom = msg.typedAt
	}
	m.page.focus, m.page.focusTab, m.page.focusErr = msg.focus, msg.tab, ""
}

// focusLine is the panel's line under its title while typing: where the
// keys go, and how many printable keys reached it (never which).
func (m Model) focusLine(tab consent.TabID, w int) string {
	const lead = " keys go to: "
	switch {
	case m.page.focusErr != "":
		return m.st.warn.Render(trunc(lead+"unknown ("+clean(m.page.focusErr)+")", w))
	case m.page.focusTab != tab:
		return m.st.dim.Render(trunc(lead+"reading the page's focus…", w))
	case m.page.focus.Label == "":
		// Whole clauses drop, the fix last: a cut "press tab or cli…"
		// read as a key to press.
		return m.st.warn.Render(firstFit(w, lead+"nothing: no field has focus; press tab or click a field",
			" no field has focus: press tab or click a field", " no field has focus"))
	}
	count := "nothing typed here yet"
	if n := m.page.typed - m.page.typedFrom; n == 1 {
		count = "1 character typed here"
	} else if n > 1 {
		count = strconv.Itoa(n) + " characters typed here"
	}
	label := clean(m.page.focus.Label)
	rest := " · " + count
	if width(lead+label+rest) > w {
		rest = ""
	}
	return m.st.dim.Render(lead) + m.st.banner.Render(trunc(label, max(0, w-width(lead)))) + m.st.dim.Render(rest)
}

// focusBox is the focused element's box to outline in tab's picture.
func (m Model) focusBox(tab consent.TabID) ([4]float64, bool) {
	if !m.showsFocus() || m.page.focusTab != tab || !m.page.focus.HasBox {
		return [4]float64{}, false
	}
	return m.page.focus.Box, true
}

// focusTextMark is what the page text appends to the focused element's
// line while typing.
const focusTextMark = "  ◀ keys go here"
