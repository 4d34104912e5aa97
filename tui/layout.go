package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/viewport"
	"github.com/tabwarden/tabwarden/consent"
)

// wideWidth is where the screen splits into inventory left, review right.
const wideWidth = 120

func (m Model) size() (int, int) {
	w, h := m.width, m.height
	if w <= 0 {
		w = defaultWidth
	}
	if h <= 0 {
		h = defaultHeight
	}
	return w, h
}

// render draws the screen: exactly h lines, none wider than w.
func (m Model) render() string {
	w, h := m.size()
	vp := m.vp
	lines, _, _ := m.compose(&vp)
	return strings.Join(fitLines(lines, w, h), "\n")
}

// syncViewport sizes the review body viewport to the space the layout gives
// it, and refills it when the focused review or the width changed.
func (m *Model) syncViewport() {
	f := m.state.Focused
	if f == nil {
		m.vpReview = ""
		return
	}
	_, pw, pbh := m.compose(nil)
	m.vp.SetWidth(pw)
	m.vp.SetHeight(max(pbh, 0))
	if f.ID != m.vpReview || pw != m.vpWidth {
		m.vp.SetContentLines(reviewBody(f, pw))
		if f.ID != m.vpReview {
			m.vp.GotoTop()
		}
		m.vpReview, m.vpWidth = f.ID, pw
	}
}

func (m Model) tabLabel(id consent.TabID) string {
	for _, c := range m.state.Conversations {
		for _, t := range c.Tabs {
			if t.ID == id {
				if t.Title != "" {
					return clean(string(id)) + " " + trunc(clean(t.Title), 30)
				}
				return clean(string(id))
			}
		}
	}
	return clean(string(id))
}

func (m Model) selectedConversation() *consent.ConversationState {
	for i := range m.state.Conversations {
		if m.state.Conversations[i].ID == m.sel.Conversation {
			return &m.state.Conversations[i]
		}
	}
	return nil
}

func (m Model) footer(w int) []string {
	line := ""
	switch {
	case m.confirmQuit:
		line = m.st.flash.Render(trunc(quitPrompt, w))
	case m.flash != "":
		line = m.st.flash.Render(trunc(m.flash, w))
	}
	hm := m.help
	hm.SetWidth(w)
	var helpText string
	if m.showHelp {
		helpText = hm.FullHelpView(m.keys.FullHelp())
	} else {
		helpText = hm.ShortHelpView(m.keys.ShortHelp())
	}
	return append([]string{line}, strings.Split(helpText, "\n")...)
}

// topSections are the banner and token box that sit above the review.
func (m Model) topSections(w int) (bannerL, tokenL []string) {
	if c := m.selectedConversation(); c != nil && c.Paused {
		bannerL = banner{conv: convLabel(*c), st: m.st}.lines(w)
	}
	if m.token != nil {
		tokenL = tokenBox{tok: *m.token, st: m.st}.lines(w)
	}
	return bannerL, tokenL
}

func (m Model) placeholder(w int) []string {
	out := []string{m.st.rule.Render(rule("No review on screen", w, "═"))}
	if n := len(m.state.Queue); n > 0 {
		out = append(out, trunc(fmt.Sprintf("  %d review(s) wait in the queue: select their conversation (tab, ↑/↓) to see them.", n), w))
	} else {
		out = append(out, "  Reviews appear here when an agent needs your decision.")
	}
	return out
}

// compose lays out the screen. vp is the body viewport to draw (nil when
// only measuring); it also returns the width and body height the layout
// gives the review panel.
func (m Model) compose(vp *viewport.Model) (lines []string, panelW, panelBodyH int) {
	w, h := m.size()
	hdr := header{s: m.state, version: m.opts.Version, st: m.st}.Render(w)
	ftr := m.footer(w)
	bodyH := max(0, h-len(hdr)-len(ftr))

	var panel *reviewPanel
	if f := m.state.Focused; f != nil {
		panel = &reviewPanel{r: f, tabLabel: m.tabLabel(f.Tab), now: m.now, st: m.st}
	}
	leftW := min(max(w*2/5, 40), 60)
	rightW := w - leftW - 3
	// The origin decides the layout: if it does not fit the right column at
	// full length, the review takes the whole width instead.
	wide := w >= wideWidth && m.originsFit(panel, rightW)

	var body []string
	if wide {
		body, panelW, panelBodyH = m.composeWide(vp, panel, w, bodyH, leftW, rightW)
	} else {
		body, panelW, panelBodyH = m.composeStacked(vp, panel, w, bodyH)
	}
	lines = append(append(hdr, body...), ftr...)
	return lines, panelW, panelBodyH
}

// originsFit reports whether every origin the review column would show fits
// a column of width w at full length.
func (m Model) originsFit(panel *reviewPanel, w int) bool {
	if panel != nil && originWidth(panel.r) > w {
		return false
	}
	for _, r := range m.state.Queue {
		if fieldLabelWidth+1+width(clean(r.Origin)) > w {
			return false
		}
	}
	return true
}

// panelLines gives the review panel n lines (its chrome at least, when the
// screen has them) and returns them with the body height.
func panelLines(p *reviewPanel, vp *viewport.Model, w, n int) ([]string, int) {
	bodyH := max(0, n-p.chromeHeight(w))
	return fitLines(p.Render(w, n, vp), w, n), bodyH
}

func (m Model) panelDesired(p *reviewPanel, w int) int {
	return p.chromeHeight(w) + m.bodyLen(p.r, w)
}

// bodyLen is the review body's line count, from the viewport when it already
// holds this review at this width: a 256 KiB disclosure is wrapped once, not
// on every frame.
func (m Model) bodyLen(r *consent.Review, w int) int {
	if m.vpReview == r.ID && m.vpWidth == w {
		return m.vp.TotalLineCount()
	}
	return len(reviewBody(r, w))
}

func (m Model) composeStacked(vp *viewport.Model, panel *reviewPanel, w, avail int) ([]string, int, int) {
	var out []string
	take := func(lines []string, n int) {
		n = max(0, min(n, avail))
		out = append(out, fitLines(lines, w, n)...)
		avail -= n
	}
	inv, selLine := inventory{s: m.state, sel: m.sel, details: m.details, st: m.st}.lines(w)
	q := queue{s: m.state, st: m.st}.lines(w)
	act := activityLog{s: m.state, st: m.st}
	invMin, qMin, actMin := min(len(inv), 3), 0, min(act.desired(), 2)
	if len(m.state.Queue) > 1 || (len(m.state.Queue) == 1 && m.state.Focused == nil) {
		// Reviews that need attention must stay on screen.
		qMin = min(len(q), 3)
	}

	bannerL, tokenL := m.topSections(w)
	take(bannerL, len(bannerL))
	take(tokenL, min(len(tokenL), avail-invMin-qMin-actMin))

	panelBodyH := 0
	if panel != nil {
		chrome := panel.chromeHeight(w)
		n := min(m.panelDesired(panel, w), max(avail-invMin-qMin-actMin, chrome+1))
		n = min(n, avail)
		var pl []string
		pl, panelBodyH = panelLines(panel, vp, w, n)
		take(pl, n)
	} else {
		ph := m.placeholder(w)
		take(ph, len(ph))
	}
	take(q, max(qMin, min(len(q), avail-invMin-actMin)))
	invN := min(len(inv), max(avail-actMin, min(invMin, avail)))
	take(window(inv, selLine, invN), invN)
	take(act.Render(w, avail), avail)
	return out, w, panelBodyH
}

func (m Model) composeWide(vp *viewport.Model, panel *reviewPanel, w, bodyH, leftW, rightW int) ([]string, int, int) {
	act := activityLog{s: m.state, st: m.st}
	actH := min(act.desired(), max(4, bodyH/4))
	actH = min(actH, bodyH)
	topH := bodyH - actH

	// Left: the inventory. Right: banner, token, review, queue — the queue
	// sits with the review so its origins get the wide column too.
	inv, selLine := inventory{s: m.state, sel: m.sel, details: m.details, st: m.st}.lines(leftW)
	left := fitLines(window(inv, selLine, topH), leftW, topH)

	var right []string
	avail := topH
	take := func(lines []string, n int) {
		n = max(0, min(n, avail))
		right = append(right, fitLines(lines, rightW, n)...)
		avail -= n
	}
	q := queue{s: m.state, st: m.st}.lines(rightW)
	qMin := min(len(q), 3)
	bannerL, tokenL := m.topSections(rightW)
	take(bannerL, len(bannerL))
	take(tokenL, min(len(tokenL), avail-qMin))
	panelBodyH := 0
	if panel != nil {
		n := min(m.panelDesired(panel, rightW), max(avail-qMin, panel.chromeHeight(rightW)+1))
		n = min(n, avail)
		var pl []string
		pl, panelBodyH = panelLines(panel, vp, rightW, n)
		take(pl, n)
	} else {
		ph := m.placeholder(rightW)
		take(ph, len(ph))
	}
	take(q, avail)

	out := make([]string, 0, bodyH)
	left, right = fitLines(left, leftW, topH), fitLines(right, rightW, topH)
	for i := 0; i < topH; i++ {
		out = append(out, padRight(left[i], leftW)+m.st.rule.Render(" │ ")+right[i])
	}
	out = append(out, fitLines(act.Render(w, actH), w, actH)...)
	return out, rightW, panelBodyH
}
