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
	lines, _, _ := m.composePage(&vp)
	return strings.Join(fitLines(lines, w, h), "\n")
}

// syncViewport sizes the review body viewport to the space the layout gives
// it, and refills it when what the body is laid out from changed.
func (m *Model) syncViewport() {
	f := m.state.Focused
	if f == nil {
		m.vpKey = bodyKey{}
		return
	}
	_, pw, pbh := m.composePage(nil)
	m.vp.SetWidth(pw)
	m.vp.SetHeight(max(pbh, 0))
	tab := m.tabState(f.Tab)
	if k := newBodyKey(f, tab, pw, m.details); k != m.vpKey {
		m.vp.SetContentLines(reviewBody(f, tab, pw, m.details))
		if f.ID != m.vpKey.review {
			m.vp.GotoTop()
		}
		m.vpKey = k
	}
}

// bodyKey is everything reviewBody lays a body out from besides the review
// itself, which does not change under its ID: the width, and what the body
// says of the review's tab (stayText, its only use of the tab).
type bodyKey struct {
	review string
	width  int
	stay   string
	expand bool
}

func newBodyKey(r *consent.Review, tab *consent.TabState, w int, expand bool) bodyKey {
	return bodyKey{review: r.ID, width: w, stay: stayText(tab), expand: expand}
}

// tabState finds a tab of a conversation by id; nil when the inventory
// does not list it.
func (m Model) tabState(id consent.TabID) *consent.TabState {
	for i := range m.state.Conversations {
		for j := range m.state.Conversations[i].Tabs {
			if t := &m.state.Conversations[i].Tabs[j]; t.ID == id {
				return t
			}
		}
	}
	return nil
}

// tabTitle is a tab's page title, whole; "" when unknown.
func (m Model) tabTitle(id consent.TabID) string {
	if t := m.tabState(id); t != nil {
		return clean(t.Title)
	}
	return ""
}

func (m Model) tabLabel(id consent.TabID) string {
	if t := m.tabState(id); t != nil && t.Title != "" {
		return clean(string(id)) + " " + trunc(clean(t.Title), 30)
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

// section is one screen part: what it would show with unlimited height
// (desired) and how to draw it in a given height.
type section struct {
	desired int
	render  func(w, h int) string
}

func (m Model) bannerSection(w int) section {
	c := m.selectedConversation()
	if c == nil || !c.Paused {
		return section{}
	}
	b := banner{conv: convLabel(*c), headless: m.opts.Headless, pageView: m.opts.Page != nil, noTab: len(c.Tabs) == 0, note: clean(c.PauseNote), st: m.st}
	if c.PausedBy != "" && c.PausedBy != m.operator().Name {
		b.by = clean(c.PausedBy)
	}
	return section{len(b.lines(w)), b.Render}
}

func (m Model) tokenSection(w int) section {
	if m.tokens == nil {
		return section{}
	}
	t := tokenBox{p: *m.tokens, st: m.st, pageOn: m.page.on}
	return section{len(t.lines(w)), t.Render}
}

func (m Model) placeholder(w int) section {
	lines := []string{m.st.rule.Render(rule("No review on screen", w, "═"))}
	text := "Reviews appear here when an agent needs your decision."
	switch n := len(m.state.Queue); {
	case n == 1:
		text = "1 review waits in the queue: g shows it (or select its conversation: tab, ↑/↓)."
	case n > 1:
		text = fmt.Sprintf("%d reviews wait in the queue: g shows the oldest (or select a conversation: tab, ↑/↓).", n)
	}
	// Wrapped, not cut: the sentence ends with how to get to the review.
	for _, l := range wrap(text, w-2) {
		lines = append(lines, "  "+l)
	}
	return section{len(lines), func(w, h int) string { return block(lines, w, h) }}
}

// stack draws sections top to bottom into exactly h lines.
type stack struct {
	w, avail int
	out      []string
}

func (s *stack) take(sec section, n int) {
	n = max(0, min(n, s.avail))
	if n == 0 || sec.render == nil {
		return
	}
	s.out = append(s.out, strings.Split(sec.render(s.w, n), "\n")...)
	s.avail -= n
}

// compose lays out the screen. vp is the body viewport to draw (nil when
// only measuring); it also returns the width and body height the layout
// gives the review panel.
func (m Model) compose(vp *viewport.Model) (lines []string, panelW, panelBodyH int) {
	w, h := m.size()
	hdr, ftr := m.headerFooter()
	hdrH, ftrH := len(hdr.lines(w)), len(ftr.lines(w))
	if m.bodyOnly {
		hdrH, ftrH = 0, 0
	}
	bodyH := max(0, h-hdrH-ftrH)

	var panel *reviewPanel
	if f := m.state.Focused; f != nil {
		panel = &reviewPanel{r: f, tabLabel: m.tabLabel(f.Tab), tabID: clean(string(f.Tab)), tabTitle: m.tabTitle(f.Tab), now: m.now, st: m.st, vp: vp}
	}
	leftW := min(max(w*2/5, 40), 60)
	rightW := w - leftW - 3
	// The origins decide the layout: if one does not fit the review column
	// at full length, the review takes the whole width instead.
	wide := w >= wideWidth && m.originsFit(panel, rightW) && m.configFits(rightW)

	var body []string
	if wide {
		body, panelW, panelBodyH = m.composeWide(panel, w, bodyH, leftW, rightW)
	} else {
		body, panelW, panelBodyH = m.composeStacked(panel, w, bodyH)
	}
	if m.bodyOnly {
		return body, panelW, panelBodyH
	}
	lines = strings.Split(hdr.Render(w, hdrH), "\n")
	lines = append(lines, body...)
	lines = append(lines, strings.Split(ftr.Render(w, ftrH), "\n")...)
	return lines, panelW, panelBodyH
}

// headerFooter is the screen's header and footer as they stand.
func (m Model) headerFooter() (header, footer) {
	hdr := header{s: m.state, version: m.opts.Version, st: m.st, remote: m.opts.Remote}
	ftr := footer{flash: m.flash, confirm: m.confirmQuit, operators: m.quitDisconnects(), live: len(m.state.Conversations) > 0, showHelp: m.showHelp, help: m.help, keys: m.keys, st: m.st, cache: m.helpCache, typing: m.page.on && m.page.input}
	if m.promptOpen {
		ftr.prompt = m.input.View()
	}
	return hdr, ftr
}

// configFits reports whether a configuration minted in the n panel fits
// a column of width w uncut: one that does not takes the whole width,
// where a token line usually fits, so it can be copied off the screen.
func (m Model) configFits(w int) bool {
	if m.tokens == nil || m.tokens.minted == nil {
		return true
	}
	for _, l := range splitLines(cleanBlock(m.tokens.minted.Config)) {
		if width(l) > w {
			return false
		}
	}
	return true
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

// bodyLen is the review body's line count, from the viewport when it already
// holds this review at this width: a 256 KiB disclosure is wrapped once, not
// on every frame.
func (m Model) bodyLen(r *consent.Review, w int) int {
	tab := m.tabState(r.Tab)
	if newBodyKey(r, tab, w, m.details) == m.vpKey {
		return m.vp.TotalLineCount()
	}
	return len(reviewBody(r, tab, w, m.details))
}

// composeStacked puts everything in one column (below 120 columns, or when
// an origin needs the full width). The review gets what it needs first.
// With a review on screen the activity log comes next: it is where an
// agent says why it asks (the demo's narration tells a newcomer what to
// press), so the inventory keeps only a few lines until the log has what
// it wants; so does the queue, unless other reviews wait in it (decisions
// outrank log lines). Without a review the queue and the inventory, which
// is then what the operator navigates, come before the log.
func (m Model) composeStacked(panel *reviewPanel, w, avail int) ([]string, int, int) {
	st := &stack{w: w, avail: avail}
	inv := m.inventoryView().section(w)
	q := queue{s: m.state, now: m.now, st: m.st}.section(w)
	act := activityLog{s: m.state, limit: m.opts.ActivityLines, st: m.st}.section(w, avail)
	invMin, qMin, actMin := min(inv.desired, 3), 0, min(act.desired, 2)
	if panel == nil {
		// With no review to read, the newest entry is what to read: it
		// says what to press next (the demo's "Press q, then y" was cut
		// to one line at 80×24 under a take-over's banner).
		actMin = min(act.desired, m.activityMin(w))
	}
	if len(m.state.Queue) > 1 || (len(m.state.Queue) == 1 && m.state.Focused == nil) {
		// Reviews that need attention must stay on screen.
		qMin = min(q.desired, 3)
	}
	panelBodyH := m.reviewColumn(panel, w).stack(st, invMin+qMin+actMin)

	// What comes before the log, beyond its minimum.
	qFirst, invFirst := qMin, invMin
	switch {
	case panel == nil:
		qFirst, invFirst = q.desired, inv.desired
	case qMin > 0:
		qFirst = q.desired
	}
	actH := min(act.desired, max(actMin, st.avail-invFirst-qFirst))
	st.take(q, min(q.desired, max(qMin, st.avail-actH-invMin)))
	st.take(inv, min(inv.desired, max(invMin, st.avail-actH)))
	st.take(act, st.avail)
	return fitLines(st.out, w, avail), w, panelBodyH
}

// stackedReviewNeed is how many body lines the stacked layout at width w
// needs to show the focused review whole (its column and the minimum it
// keeps for the sections below); 0 without a review.
func (m Model) stackedReviewNeed(w int) int {
	f := m.state.Focused
	if f == nil {
		// No review: the picture keeps its room unless the operator
		// opened the token or grants panel, which then shows whole (the
		// walk saw only its title under a take-over's banner).
		if m.tokens == nil && m.grants == nil {
			return 0
		}
		inv := m.inventoryView().section(w)
		return m.reviewColumn(nil, w).height() + min(inv.desired, 3) + m.activityMin(w)
	}
	panel := &reviewPanel{r: f, tabLabel: m.tabLabel(f.Tab), tabID: clean(string(f.Tab)), tabTitle: m.tabTitle(f.Tab), now: m.now, st: m.st}
	inv := m.inventoryView().section(w)
	act := activityLog{s: m.state, limit: m.opts.ActivityLines, st: m.st}.section(w, 2)
	reserve := min(inv.desired, 3) + min(act.desired, 2)
	if len(m.state.Queue) > 1 {
		reserve += min(queue{s: m.state, now: m.now, st: m.st}.section(w).desired, 3)
	}
	return m.reviewColumn(panel, w).height() + reserve
}

// activityMin is the least the stacked log keeps with no review on
// screen: its heading and the newest entry whole, up to four lines.
func (m Model) activityMin(w int) int {
	a := activityLog{s: m.state, limit: m.opts.ActivityLines, st: m.st}
	if a.shown() == 0 {
		return 2 // the heading and "Nothing yet."
	}
	return 1 + min(a.newestHeight(w), 4)
}

// composeWide puts the inventory on the left and the review column (banner,
// token, review, queue) on the right, with the activity log below both. The
// log gets every line the two columns above do not need, and never less
// than a quarter of the body (at least 4 lines) while it has entries for
// them.
func (m Model) composeWide(panel *reviewPanel, w, bodyH, leftW, rightW int) ([]string, int, int) {
	act := activityLog{s: m.state, limit: m.opts.ActivityLines, st: m.st}.section(w, bodyH)
	inv := m.inventoryView().section(leftW)
	q := queue{s: m.state, now: m.now, st: m.st}.section(rightW)
	col := m.reviewColumn(panel, rightW)

	need := max(inv.desired, col.height()+q.desired)
	actWant := act.desired
	actH := min(actWant, max(min(actWant, max(4, bodyH/4)), bodyH-need), bodyH)
	topH := bodyH - actH

	left := strings.Split(inv.render(leftW, topH), "\n")
	st := &stack{w: rightW, avail: topH}
	qMin := min(q.desired, 3)
	panelBodyH := col.stack(st, qMin)
	st.take(q, st.avail)
	right := fitLines(st.out, rightW, topH)

	out := make([]string, 0, bodyH)
	for i := 0; i < topH; i++ {
		out = append(out, padRight(left[i], leftW)+m.st.rule.Render(" │ ")+right[i])
	}
	if actH > 0 {
		out = append(out, strings.Split(act.render(w, actH), "\n")...)
	}
	return out, rightW, panelBodyH
}

// reviewColumn is the top of the review column at one width: take-over
// banner, token box, then the focused review or its placeholder. It is
// measured once per frame and serves both the wide layout's height budget
// and the drawing.
type reviewColumn struct {
	banner, token, grants, main section
	chrome                      int  // the review panel's lines besides its body
	review                      bool // main is a review panel, not the placeholder
}

func (m Model) reviewColumn(panel *reviewPanel, w int) reviewColumn {
	c := reviewColumn{banner: m.bannerSection(w), token: m.tokenSection(w), grants: m.grantsSection(w)}
	if panel == nil {
		c.main = m.placeholder(w)
		return c
	}
	c.chrome, c.review = panel.chromeHeight(w), true
	c.main = section{c.chrome + m.bodyLen(panel.r, w), panel.Render}
	return c
}

// height is what stack would draw given room.
func (c reviewColumn) height() int {
	return c.banner.desired + c.token.desired + c.grants.desired + c.main.desired
}

// stack stacks the column into st, leaving reserve lines for the sections
// below. It returns the review body's height.
func (c reviewColumn) stack(st *stack, reserve int) int {
	st.take(c.banner, c.banner.desired)
	// An open token or grants panel does not squeeze a review on screen
	// below its head and a few lines of what it will do: that is read
	// before a is pressed (the walk saw "lines 1-0 of 1" under n).
	reviewMin := 0
	if c.review {
		reviewMin = min(c.main.desired, c.chrome+3)
	}
	st.take(c.token, min(c.token.desired, st.avail-reserve-reviewMin))
	st.take(c.grants, min(c.grants.desired, st.avail-reserve-reviewMin))
	if !c.review {
		st.take(c.main, c.main.desired)
		return 0
	}
	n := min(c.main.desired, max(st.avail-reserve, c.chrome+1), st.avail)
	st.take(c.main, n)
	return max(0, n-c.chrome)
}

// inventoryView is the conversation list as this screen shows it now.
func (m Model) inventoryView() inventory {
	// An open token or grants panel takes ↑↓ for itself.
	return inventory{s: m.state, sel: m.sel, details: m.details, st: m.st, now: m.now, arrowsTaken: m.tokens != nil || m.grants != nil}
}
