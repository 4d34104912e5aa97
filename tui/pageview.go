package tui

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/tabwarden/tabwarden/consent"
)

// The page view (design.md §13): `v` shows the selected tab's page in a panel,
// drawn with the terminal's image protocol (pageimage.go, termdetect.go) or
// half-block characters in true colour; `i`, only while the
// tab's conversation is taken over, sends typed keys and clicks on the
// panel to the page until esc. Every screen (the console's and each SSH
// one) has its own view, stream and input mode.
//
// Delivery: frames coalesce. The browser sends at most one per
// FrameInterval; the stream keeps only the newest undelivered frame, and
// the screen draws whichever is newest when it renders. Typed keys never
// drop or reorder: one worker per screen sends them in order (a full queue
// refuses the key and says so).
//
// The view is the operator's eyes only: frames live in this screen's
// memory, are never written anywhere and never reach an agent.

// PageSource is the browser side of the page view. The browser implements
// it; the TUI never talks to Chromium itself.
type PageSource interface {
	// PageFrames streams pictures of tab's viewport, at most maxW×maxH
	// pixels, to deliver until ctx ends; cssW×cssH is the viewport in CSS
	// pixels. deliver must not block.
	PageFrames(ctx context.Context, tab consent.TabID, maxW, maxH int, deliver func(img image.Image, cssW, cssH float64)) error
	// PageKey types into tab (key: a DOM key name such as Enter or Tab, or
	// empty with text for a printable key). It fails unless tab's
	// conversation is taken over.
	PageKey(ctx context.Context, tab consent.TabID, key, text string) error
	// PageClick clicks tab at viewport point x, y (CSS pixels). It fails
	// unless tab's conversation is taken over.
	PageClick(ctx context.Context, tab consent.TabID, x, y float64) error
}

const (
	// frameMaxW×frameMaxH is the picture size asked of the browser: more
	// pixels than the largest terminal shows in half-blocks, few enough to
	// decode in a few milliseconds.
	frameMaxW, frameMaxH = 480, 360
	// inputQueue bounds the keys and clicks waiting for the page.
	inputQueue   = 64
	flashNoInput = "i types into the page only during a take-over: press t first"
	// pageTakeOverText is the take-over banner of a screen with the page
	// view: the step can be done here, headed window or not.
	pageTakeOverText = "You have the browser. Press v to see the page and i to type and click into it (esc stops), or use the Chromium window if there is one; then press r to resume."
	// pageHeadlessTakeOverText is pageTakeOverText for a Chromium without
	// a window: the view is the only way to the page.
	pageHeadlessTakeOverText = "You have the browser. This Chromium is headless (no window): press v to see the page and i to type and click into it (esc stops); then press r to resume."
)

// pageFrame is one picture and the viewport it shows.
type pageFrame struct {
	img        image.Image
	cssW, cssH float64
	seq        uint64
}

// pageStream is one running PageFrames call; the newest frame waits in
// frames (one slot) for the screen.
type pageStream struct {
	tab    consent.TabID
	ctx    context.Context
	cancel context.CancelFunc
	frames chan pageFrame
	seq    atomic.Uint64
}

func (ps *pageStream) deliver(img image.Image, w, h float64) {
	f := pageFrame{img: img, cssW: w, cssH: h, seq: ps.seq.Add(1)}
	for {
		select {
		case ps.frames <- f:
			return
		default:
		}
		select {
		case <-ps.frames: // drop the older frame
		default:
		}
	}
}

type (
	pageFrameMsg struct {
		ps *pageStream
		f  pageFrame
	}
	pageEndedMsg struct {
		ps  *pageStream
		err error
	}
	// pageRetryMsg lets a stream that ended start again.
	pageRetryMsg struct{ ps *pageStream }
)

// pageRetry is how long a view waits before it starts again a stream that
// ended by itself (Chromium relaunching, the tab gone): never a busy loop.
const pageRetry = 2 * time.Second

func (ps *pageStream) wait() tea.Cmd {
	return func() tea.Msg {
		select {
		case f := <-ps.frames:
			return pageFrameMsg{ps, f}
		case <-ps.ctx.Done():
			return nil
		}
	}
}

// pageInput is one key or click for the page, or a read of its focus
// (focus set): queued behind the keys before it, so it sees where they
// moved the focus.
type pageInput struct {
	tab       consent.TabID
	key, text string
	click     bool
	x, y      float64
	focus     chan<- pageFocusMsg
	typedAt   int // pageView.typed when the read was asked for
	seq       uint64
}

// pageShared is the page view's part that copies of the model share (like
// subscription): the running stream, the input worker, the render cache.
// Close stops them.
type pageShared struct {
	mu     sync.Mutex
	stream *pageStream
	closed bool

	inputOnce sync.Once
	input     chan pageInput
	inputErr  atomic.Pointer[string]
	// focusQueued is set while a focus read waits in input; the clock's
	// read is skipped then (the waiting one runs after every key queued
	// before it), focusSeq orders the reads.
	focusQueued atomic.Bool
	focusSeq    atomic.Uint64
	ctx         context.Context
	cancel      context.CancelFunc

	cache        pageCache
	placeholders placeholderCache
	// viewHash is the hash of the screen View last drew while a sixel or
	// iTerm2 picture was shown (pageimage.go).
	viewHash atomic.Uint64
}

func newPageShared() *pageShared {
	ctx, cancel := context.WithCancel(context.Background())
	return &pageShared{ctx: ctx, cancel: cancel}
}

func (s *pageShared) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.stream != nil {
		s.stream.cancel()
		s.stream = nil
	}
	s.cancel()
}

// send queues in for the worker (started on first use); false when the
// queue is full or the screen closed.
func (s *pageShared) send(src PageSource, in pageInput) bool {
	s.inputOnce.Do(func() {
		s.input = make(chan pageInput, inputQueue)
		go func() {
			for {
				select {
				case <-s.ctx.Done():
					return
				case in := <-s.input:
					if in.focus != nil {
						s.focusQueued.Store(false)
						in.focus <- readFocus(s.ctx, src, in)
						continue
					}
					var err error
					if in.click {
						err = src.PageClick(s.ctx, in.tab, in.x, in.y)
					} else {
						err = src.PageKey(s.ctx, in.tab, in.key, in.text)
					}
					if err != nil && s.ctx.Err() == nil {
						msg := err.Error()
						s.inputErr.Store(&msg)
					}
				}
			}
		}()
	})
	select {
	case s.input <- in:
		return true
	default:
		return false
	}
}

// pageView is the model's own page view state (a value, copied with it).
type pageView struct {
	on    bool
	input bool // typing into the page
	// text: the panel shows the page's text (V) instead of its picture,
	// for a terminal too small to read the picture; textTop is the first
	// line shown ([ and ] scroll).
	text     bool
	textTab  consent.TabID
	textLine []string
	textErr  string
	textTop  int
	textAge  int // ticks since the text was read
	// textReading: a read is under way (frames do not start another).
	textReading bool
	// focus is where typed keys go while input is on (the focus marker),
	// focusTab the tab it was read in; typed counts the printable keys sent
	// since input began, typedFrom where the focused element's count
	// starts (the screen shows how many reached it, never what).
	focus     PageFocus
	focusTab  consent.TabID
	focusErr  string
	focusSeq  uint64
	typed     int
	typedFrom int
	// stream is the stream this screen started last; frames of another
	// are stale.
	stream *pageStream
	frame  pageFrame
	err    string
	// ended is a stream that ended by itself; no new one starts for its
	// tab until pageRetryMsg clears it.
	ended *pageStream
	// img is the picture an image protocol shows (pageimage.go).
	img pageImage
}

// pageTab is the tab the view shows: this screen's selected tab, else the
// focused review's, else the selected conversation's first, else (an SSH
// screen that selected nothing yet) the console's selected tab, the
// browser's front one.
func (m Model) pageTab() consent.TabID {
	if m.sel.Tab != "" && m.tabState(m.sel.Tab) != nil {
		return m.sel.Tab
	}
	if f := m.state.Focused; f != nil && f.Tab != "" {
		return f.Tab
	}
	if c := m.selectedConversation(); c != nil && len(c.Tabs) > 0 {
		return c.Tabs[0].ID
	}
	if t := m.state.Selection.Tab; t != "" && m.tabState(t) != nil {
		return t
	}
	return ""
}

// tabConversation is the live conversation that owns tab, or nil.
func (m Model) tabConversation(tab consent.TabID) *consent.ConversationState {
	for i, c := range m.state.Conversations {
		for _, t := range c.Tabs {
			if t.ID == tab {
				return &m.state.Conversations[i]
			}
		}
	}
	return nil
}

// takenOver reports whether tab belongs to a conversation this screen's
// operator has taken over: one taken over by another operator stays
// theirs to drive (they may be signing in).
func (m Model) takenOver(tab consent.TabID) bool {
	c := m.tabConversation(tab)
	return c != nil && c.Paused && (c.PausedBy == "" || c.PausedBy == m.operator().Name)
}

// takenOverBy is the other operator whose take-over holds tab's
// conversation, or "".
func (m Model) takenOverBy(tab consent.TabID) string {
	if c := m.tabConversation(tab); c != nil && c.Paused && c.PausedBy != "" && c.PausedBy != m.operator().Name {
		return c.PausedBy
	}
	return ""
}

// pageKey handles v, i and, in input mode, every key. It reports whether
// it used k.
func (m *Model) pageKey(k tea.KeyPressMsg) (tea.Cmd, bool) {
	if m.page.input {
		if k.String() == "ctrl+c" {
			m.page.input = false
			return nil, false // quitting still works
		}
		if k.String() == "esc" {
			m.page.input = false
			return m.setFlash("stopped typing into the page"), true
		}
		tab := m.pageTab()
		if !m.takenOver(tab) {
			m.page.input = false
			return m.setFlash("the take-over ended: the page view is read-only again"), true
		}
		in, ok := pageKeyInput(k)
		if !ok {
			return nil, true // not a key the page view sends; never a console key
		}
		in.tab = tab
		if m.opts.Page == nil || !m.pageShared.send(m.opts.Page, in) {
			return m.setFlash("the page is not taking keys this fast: key dropped"), true
		}
		if in.key == "" || in.key == " " {
			m.page.typed++
			return nil, true
		}
		// A named key (tab, enter, arrows) may move the focus.
		return m.readFocus(), true
	}
	switch {
	case k.String() == "v":
		if m.opts.Page == nil {
			return m.setFlash("the page view needs the browser (not in --script mode)"), true
		}
		m.page.on = !m.page.on
		return nil, true
	case k.String() == "V":
		if m.opts.Page == nil {
			return m.setFlash("the page view needs the browser (not in --script mode)"), true
		}
		if _, ok := m.opts.Page.(PageTextSource); !ok {
			return m.setFlash("this console cannot read the page's text"), true
		}
		// V shows the text; pressed on the text it goes back to the
		// picture. A closed view opens on the text whatever it showed
		// last.
		m.page.text = !m.page.on || !m.page.text
		m.page.on = true
		m.page.textTop = 0
		if !m.page.text {
			return nil, true
		}
		return m.readPageText(), true
	case m.page.on && m.page.text && (k.String() == "]" || k.String() == "["):
		g := m.pageGeom()
		step := max(1, (g.ph-1)/2)
		if k.String() == "[" {
			step = -step
		}
		m.page.textTop = max(0, min(m.page.textTop+step, len(m.pageTextLines(g.pw))-1))
		return nil, true
	case k.String() == "i":
		tab := m.pageTab()
		switch {
		case m.opts.Page == nil:
			return m.setFlash("the page view needs the browser (not in --script mode)"), true
		case tab != "" && m.takenOverBy(tab) != "":
			return m.setFlash(clean(m.takenOverBy(tab)) + " has this take-over: i types only in a take-over of your own"), true
		case tab == "" || !m.takenOver(tab):
			return m.setFlash(flashNoInput), true
		}
		m.page.on, m.page.input = true, true
		m.page.focus, m.page.focusTab, m.page.focusErr = PageFocus{}, "", ""
		m.page.typed, m.page.typedFrom = 0, 0
		return tea.Batch(m.setFlash("typing into the page: keys and clicks go to it; esc stops"), m.readFocus()), true
	}
	return nil, false
}

// pageKeyInput maps a key press to what the page gets.
func pageKeyInput(k tea.KeyPressMsg) (pageInput, bool) {
	named := map[string]string{
		"enter": "Enter", "tab": "Tab", "backspace": "Backspace", "delete": "Delete",
		"left": "ArrowLeft", "right": "ArrowRight", "up": "ArrowUp", "down": "ArrowDown",
		"home": "Home", "end": "End", "pgup": "PageUp", "pgdown": "PageDown", "space": " ",
	}
	if n, ok := named[k.String()]; ok {
		return pageInput{key: n}, true
	}
	if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt) == 0 {
		return pageInput{text: k.Text}, true
	}
	return pageInput{}, false
}

// pageUpdate handles the page view's messages; it reports whether msg was
// one.
func (m *Model) pageUpdate(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case pageFrameMsg:
		if msg.ps != m.page.stream {
			return nil, true
		}
		m.page.frame, m.page.err = msg.f, ""
		// The first frame makes room for the page's text beside the
		// picture: read it now rather than at the next tick.
		if !m.page.textReading && m.page.textTab != m.pageTab() && m.textAreaIn(m.pageGeom()).rows > 0 {
			return tea.Batch(msg.ps.wait(), m.readPageText()), true
		}
		return msg.ps.wait(), true
	case pageEndedMsg:
		if msg.ps != m.page.stream {
			return nil, true
		}
		m.page.stream, m.page.ended = nil, msg.ps
		if msg.err != nil {
			m.page.err = msg.err.Error()
		}
		ps := msg.ps
		return tea.Tick(pageRetry, func(time.Time) tea.Msg { return pageRetryMsg{ps} }), true
	case pageRetryMsg:
		if msg.ps == m.page.ended {
			m.page.ended = nil
		}
		return nil, true
	case tea.MouseClickMsg:
		if !m.page.input || msg.Button != tea.MouseLeft {
			return nil, true
		}
		tab := m.pageTab()
		g := m.pageGeom()
		x, y, ok := g.pagePoint(msg.X, msg.Y, m.page.frame)
		if !ok || !m.takenOver(tab) || m.opts.Page == nil {
			return nil, true
		}
		if !m.pageShared.send(m.opts.Page, pageInput{tab: tab, click: true, x: x, y: y}) {
			return m.setFlash("the page is not taking clicks this fast: click dropped"), true
		}
		return m.readFocus(), true
	case pageFocusMsg:
		m.takeFocus(msg)
		return nil, true
	}
	return nil, false
}

// syncPage starts the stream the view needs (the shown tab, while the view
// is on) and stops any other, so frames flow only while someone looks.
func (m *Model) syncPage() tea.Cmd {
	if s := m.pageShared.inputErr.Swap(nil); s != nil && m.page.input {
		m.page.err = *s
	}
	if m.page.input && !m.takenOver(m.pageTab()) {
		m.page.input = false
	}
	want := consent.TabID("")
	if m.page.on && m.opts.Page != nil {
		want = m.pageTab()
	}
	cur := m.page.stream
	if cur != nil && cur.tab == want {
		return nil
	}
	if cur == nil && m.page.ended != nil && m.page.ended.tab == want {
		return nil // waiting out pageRetry
	}
	m.page.ended = nil
	sh := m.pageShared
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.stream != nil {
		sh.stream.cancel()
		sh.stream = nil
	}
	m.page.stream, m.page.frame, m.page.err = nil, pageFrame{}, ""
	if want == "" || sh.closed {
		return nil
	}
	ctx, cancel := context.WithCancel(sh.ctx)
	ps := &pageStream{tab: want, ctx: ctx, cancel: cancel, frames: make(chan pageFrame, 1)}
	sh.stream, m.page.stream = ps, ps
	src := m.opts.Page
	run := func() tea.Msg {
		err := src.PageFrames(ctx, want, frameMaxW, frameMaxH, ps.deliver)
		if ctx.Err() != nil {
			err = nil
		}
		return pageEndedMsg{ps: ps, err: err}
	}
	return tea.Batch(run, ps.wait())
}

// pageGeom is where the page panel goes on this screen.
type pageGeom struct {
	side bool
	// the rest of the screen, laid out as usual in restW×restH
	restW, restH int
	// the panel: x0, y0 its top-left cell, pw×ph its size (title line
	// included)
	x0, y0, pw, ph int
	// bottom, when set, is the first row the picture must not reach (a
	// sixel or iTerm2 picture on the screen's last row scrolls it); limit,
	// when set, caps the picture's rows and columns (kitty's diacritics).
	bottom, limit int
	// head is the panel's lines above the picture: its title, while
	// typing into the page the focus line, and textHint's line.
	head int
	// textHint: the picture is too small to read, and the panel says V
	// shows the page as text (pictureTooSmall).
	textHint bool
	// folded: the panel is its title line alone, its rows lent to a
	// review that marks nothing on the page (foldsFor).
	folded bool
}

// pageSideWidth is the width from which the panel sits right of the rest.
const pageSideWidth = 120

// pageMinH is the least a stacked page panel keeps (its title and four
// rows of picture) when a review needs the rest of the screen.
const pageMinH = 5

func (m Model) pageGeom() pageGeom {
	g := m.pageGeomCells()
	g.head = 1
	if m.showsFocus() {
		g.head = 2
	}
	switch m.pageProto() {
	case PageSixel, PageITerm2:
		_, h := m.size()
		g.bottom = h - 1
	case PageKitty:
		g.limit = maxPlaceholders
	}
	if m.pictureTooSmall(g) {
		g.textHint = true
		g.head++
		// Room the picture leaves shows the page's text instead of a
		// line pointing at it.
		bare := g
		bare.textHint = false
		bare.head--
		if m.textAreaIn(bare).rows > 0 {
			return bare
		}
	}
	return g
}

// textArea is where a half-block picture's panel shows the page's text in
// the room the picture leaves: right of it (a stacked panel is wider than
// the picture) or under it (a side panel is taller). At 80×24 the picture
// is about 28 columns of an 80-column panel, and at 120×40 it fills 19 of
// 39 rows: too coarse to read either way (issue 25 §11), so the rest
// shows what V would, as far as it fits.
type textArea struct {
	right      bool
	x, y, cols int // the area's first cell, relative to the panel
	rows       int // 0: no area
}

// textMinCols and textMinRows are the least room worth a text area.
const (
	textMinCols = 24
	textMinRows = 4
)

// textAreaIn is g's text area: only for a half-block picture of a page
// whose text this console can read, not in text mode (V shows it all).
func (m Model) textAreaIn(g pageGeom) textArea {
	f := m.page.frame
	if !m.page.on || m.page.text || f.img == nil || m.pageTab() == "" || m.page.err != "" || m.pageProto() != PageHalfBlock {
		return textArea{}
	}
	if _, ok := m.opts.Page.(PageTextSource); !ok {
		return textArea{}
	}
	x0, y0, cols, rows := g.picture(f)
	if cols == 0 {
		return textArea{}
	}
	if free := g.pw - cols - 3; free >= textMinCols { // " │ " between
		return textArea{right: true, x: x0 - g.x0 + cols + 3, y: y0 - g.y0, cols: free, rows: rows}
	}
	if free := g.ph - (y0 - g.y0) - rows; free >= textMinRows {
		return textArea{x: 0, y: y0 - g.y0 + rows, cols: g.pw, rows: free}
	}
	return textArea{}
}

// textAreaLines fills a: a heading naming V, then the page's text from
// its top, its last line saying more is there when it does not fit.
func (m Model) textAreaLines(a textArea, tab consent.TabID) []string {
	heading := firstFit(a.cols, "page text · V shows all of it", "page text · V all", "V: text")
	if !a.right {
		heading = rule(heading, a.cols, "─")
	}
	out := []string{m.st.dim.Render(heading)}
	switch {
	case m.page.textErr != "":
		for _, l := range wrap(pageTextTrouble(m.page.textErr), a.cols) {
			out = append(out, m.st.dim.Render(l))
		}
		return out
	case m.page.textTab != tab:
		return append(out, m.st.dim.Render(trunc("reading the page's text…", a.cols)))
	}
	text := m.pageTextLines(a.cols + 1)
	room := a.rows - 1
	if len(text) > room && room > 0 {
		text = append(text[:room-1:room-1], m.st.dim.Render(trunc(fmt.Sprintf("… %d more lines: V", len(text)-(room-1)), a.cols)))
	}
	return append(out, text...)
}

// readableScale is the least picture detail, in pixels per CSS pixel of
// the page, at which the page's body text can be read: below it a 16 px
// line of text is under 8 pixels tall.
const readableScale = 0.5

// pictureTooSmall reports whether the picture in g shows the page too
// coarsely to read its text while V, the page as text, is at hand: the
// panel then says so (issue 25). A picture never has more detail than its
// frame, nor more than its cells hold: one pixel per column in
// half-blocks, the cell's width in an image protocol.
func (m Model) pictureTooSmall(g pageGeom) bool {
	f := m.page.frame
	if !m.page.on || m.page.text || f.img == nil || f.cssW <= 0 || m.pageTab() == "" {
		return false
	}
	if _, ok := m.opts.Page.(PageTextSource); !ok {
		return false
	}
	_, _, cols, _ := g.picture(f)
	perCol := 1 // a half-block cell is one pixel wide
	if m.pageProto() != PageHalfBlock {
		perCol, _ = m.cellSize()
	}
	px := min(f.img.Bounds().Dx(), cols*perCol)
	return float64(px)/f.cssW < readableScale
}

// textHint is the panel's line under a picture too small to read: the
// longest that fits w. While typing into the page every key, V too, goes
// to the page (a password field, often), so the line says esc comes first.
func textHint(w int, typing bool) string {
	hints := []string{
		"  Too small to read the page's text here: press V to see it as text.",
		"  Too small to read: press V for the page as text.",
		"  V: the page as text",
	}
	if typing {
		hints = []string{
			"  Too small to read here: esc stops typing, then V shows the page as text.",
			"  Too small to read: esc, then V for the page as text.",
			"  esc, then V: the page as text",
		}
	}
	for _, s := range hints {
		if width(s) <= w {
			return s
		}
	}
	return ""
}

func (m Model) pageGeomCells() pageGeom {
	w, h := m.size()
	hdr, ftr := m.headerFooter()
	hdrH, ftrH := len(hdr.lines(w)), len(ftr.lines(w))
	if w >= pageSideWidth {
		// The header and the footer keep the full width (the header's
		// version and browser, every key); the panel sits beside the
		// body between them.
		rest := sideRestWidth(w)
		body := max(0, h-hdrH-ftrH)
		return pageGeom{side: true, restW: rest, restH: body, x0: rest + 1, y0: hdrH, pw: w - rest - 1, ph: body}
	}
	body := max(0, h-hdrH-ftrH)
	// The picture wants w columns at the viewport's shape (4:3 until the
	// first frame says otherwise); the rest of the screen keeps at least
	// 45% of the body for the review.
	aspect := 4.0 / 3
	if f := m.page.frame; f.cssW > 0 && f.cssH > 0 {
		aspect = f.cssW / f.cssH
	}
	want := 1 + int(float64(w)/aspect/2+0.99)
	ph := max(0, min(want, body*55/100))
	// A review on screen is read before a is pressed (a fill's text, a
	// site tool's input): the picture yields rows to it, down to a strip
	// that still shows the page and its mark.
	if need := m.stackedReviewNeed(w); need > 0 && body-ph < need {
		if body-pageMinH < need && foldsFor(m.state.Focused) {
			// Even a strip of picture would cut the review, and the
			// review points at nothing in it (a site tool's input, a
			// result to share): the panel keeps its title, and its
			// picture comes back with the next review or none.
			return pageGeom{restW: w, restH: h - 1, x0: 0, y0: hdrH, pw: w, ph: 1, folded: true}
		}
		ph = max(min(ph, pageMinH), body-need)
	}
	return pageGeom{restW: w, restH: h - ph, x0: 0, y0: hdrH, pw: w, ph: ph}
}

// foldsFor reports whether a stacked page panel may fold to its title for
// review r: only reviews whose target the picture marks (a page action, a
// plan, an upload) keep a strip of it.
func foldsFor(r *consent.Review) bool {
	if r == nil {
		return false
	}
	switch r.Kind {
	case consent.KindAction, consent.KindPlan, consent.KindUpload:
		return false
	}
	return true
}

// picture is the image area inside the panel: its top-left cell and size
// in cells, fitted to the frame's shape.
func (g pageGeom) picture(f pageFrame) (x0, y0, cols, rows int) {
	head := max(1, g.head)
	cols, rows = g.pw, g.ph-head
	if g.bottom > 0 {
		rows = min(rows, g.bottom-g.y0-head)
	}
	if g.limit > 0 {
		cols, rows = min(cols, g.limit), min(rows, g.limit)
	}
	if cols <= 0 || rows <= 0 || f.img == nil {
		return g.x0, g.y0 + head, 0, 0
	}
	b := f.img.Bounds()
	aspect := float64(b.Dx()) / float64(b.Dy())
	if c := int(float64(2*rows) * aspect); c < cols {
		cols = max(1, c)
	} else {
		rows = max(1, min(rows, int(float64(cols)/aspect/2+0.5)))
	}
	return g.x0, g.y0 + head, cols, rows
}

// pagePoint maps a click on cell (x, y) to the page point under it.
func (g pageGeom) pagePoint(x, y int, f pageFrame) (float64, float64, bool) {
	px, py, cols, rows := g.picture(f)
	if cols == 0 || x < px || y < py || x >= px+cols || y >= py+rows || f.cssW <= 0 || f.cssH <= 0 {
		return 0, 0, false
	}
	return (float64(x-px) + 0.5) / float64(cols) * f.cssW, (float64(y-py) + 0.5) / float64(rows) * f.cssH, true
}

// composePage is compose with the page panel taking its room.
func (m Model) composePage(vp *viewport.Model) ([]string, int, int) {
	if !m.page.on || m.pageYields() {
		return m.compose(vp)
	}
	w, h := m.size()
	g := m.pageGeom()
	rest := m
	rest.width, rest.height = g.restW, g.restH
	rest.bodyOnly = g.side
	lines, pw, pbh := rest.compose(vp)
	if vp == nil {
		return nil, pw, pbh
	}
	panel := m.pagePanel(g)
	if g.side {
		hdr, ftr := m.headerFooter()
		out := strings.Split(hdr.Render(w, g.y0), "\n")
		sep := m.st.rule.Render("│")
		for i := range g.ph {
			l, p := "", ""
			if i < len(lines) {
				l = lines[i]
			}
			if i < len(panel) {
				p = panel[i]
			}
			out = append(out, padRight(l, g.restW)+sep+p)
		}
		out = append(out, strings.Split(ftr.Render(w, h-g.y0-g.ph), "\n")...)
		return fitLines(out, w, h), pw, pbh
	}
	out := append([]string{}, lines[:min(g.y0, len(lines))]...)
	out = append(out, panel...)
	out = append(out, lines[min(g.y0, len(lines)):]...)
	return fitLines(out, w, h), pw, pbh
}

// pageYields reports whether the open page view steps aside for a
// configuration just minted in the n panel that the rest of a side layout
// would cut: the token line is copied off the screen, the page can wait
// (esc brings it back).
func (m Model) pageYields() bool {
	if m.tokens == nil || m.tokens.minted == nil {
		return false
	}
	w, _ := m.size()
	if w < pageSideWidth {
		return false
	}
	return !m.configFits(sideRestWidth(w))
}

// sideRestWidth is what a side page view leaves the rest of the screen.
func sideRestWidth(w int) int { return max(60, w*2/5) }

// panelTitle is the panel's title and keys, shortened whole to fit its
// first line of w columns, in one order (docs/decisions.md, "Issue 25"):
// the keys' "(take-over only)" (i outside a take-over says so itself),
// then the tab's id, then the page's title from its last word (marked
// "…"), then the keys' later groups (unless keepKeys: "esc stops" typing
// must show). "Page view" and the first key stay; only a panel too narrow
// for them is cut.
func panelTitle(tab, pageTitle, keys string, keepKeys bool, w int) (string, string) {
	name := headerPart{forms: []string{"Page view"}}
	if tab != "" {
		name.forms = []string{"Page view · " + tab, "Page view"}
		if words := strings.Fields(pageTitle); len(words) > 0 {
			// The page's title says more to a person than the tab's id
			// (which the conversation list shows): the id goes first.
			forms := []string{"Page view · " + tab + " " + strings.Join(words, " ")}
			for n := len(words); n >= 1; n-- {
				f := "Page view · " + strings.Join(words[:n], " ")
				if n < len(words) {
					f += " …"
				}
				forms = append(forms, f)
			}
			name.forms = append(forms, "Page view")
		}
	}
	key := headerPart{forms: withoutParen(keys)}
	bare := len(key.forms) - 1
	for groups := strings.Split(key.forms[bare], " · "); len(groups) > 1 && !keepKeys; {
		groups = groups[:len(groups)-1]
		key.forms = append(key.forms, strings.Join(groups, " · "))
	}
	// The line is "── title ─…─ keys": the rule's head, the title, a
	// space, the fill (none at the least), a space, the keys.
	fits := func() bool { return 3+width(name.forms[name.at])+2+width(key.forms[key.at]) <= w }
	shrinkParts([]headerStep{
		{&key, bare}, {&name, len(name.forms) - 2}, {&name, len(name.forms) - 1}, {&key, len(key.forms) - 1},
	}, fits)
	return name.forms[name.at], key.forms[key.at]
}

// pagePanel draws the panel: a title line, then the picture.
func (m Model) pagePanel(g pageGeom) []string {
	tab := m.pageTab()
	pageTitle := ""
	if t := m.tabState(tab); t != nil {
		pageTitle = clean(t.Title)
	}
	keys := "v hide · V text · i type (take-over only)"
	if m.takenOver(tab) {
		keys = "v hide · V text · i type" // i works here and now
	}
	if m.page.text {
		keys = "V picture · [ ] scroll · v hide"
	}
	if m.page.input {
		keys = "TYPING INTO THE PAGE · esc stops"
	}
	if g.folded && !m.page.input {
		keys = "folded: the review needs the room · v hide"
	}
	title, keys := panelTitle(clean(string(tab)), pageTitle, keys, m.page.input, g.pw)
	head := m.st.rule.Render(rule(title, max(0, g.pw-width(keys)-1), "─")) + " "
	if m.page.input {
		head += m.st.banner.Render(keys)
	} else {
		head += m.st.dim.Render(keys)
	}
	lines := []string{head}
	if g.folded {
		return lines
	}
	if m.showsFocus() {
		lines = append(lines, m.focusLine(tab, g.pw))
	}
	if g.textHint {
		lines = append(lines, m.st.flash.Render(textHint(g.pw, m.page.input)))
	}
	f := m.page.frame
	_, _, cols, rows := g.picture(f)
	switch {
	case tab != "" && m.page.text:
		switch {
		case m.page.textErr != "":
			for _, l := range wrap(pageTextTrouble(m.page.textErr), max(1, g.pw-2)) {
				lines = append(lines, "  "+m.st.dim.Render(l))
			}
		case m.page.textTab != tab:
			lines = append(lines, "  reading the text of "+clean(string(tab))+"…")
		default:
			text := m.pageTextLines(g.pw)
			top := min(m.page.textTop, max(0, len(text)-1))
			end := min(len(text), top+max(0, g.ph-max(1, g.head)))
			lines = append(lines, text[top:end]...)
		}
	case tab == "":
		lines = append(lines, "  No tab to show: select a conversation's tab (tab, ↑/↓).")
	case m.page.err != "":
		lines = append(lines, "  "+m.st.warn.Render("page view: "+trunc(clean(m.page.err), max(0, g.pw-14))))
	case f.img == nil:
		lines = append(lines, "  waiting for the first frame of "+clean(string(tab))+"…")
	default:
		switch m.pageProto() {
		case PageKitty:
			lines = append(lines, m.pageShared.placeholders.get(cols, rows)...)
		case PageSixel, PageITerm2:
			// Blank cells the renderer leaves alone; the picture is
			// written over them (pageimage.go).
			lines = append(lines, make([]string, rows)...)
		default:
			mark, marked := m.pageMark(tab)
			focus, focused := m.focusBox(tab)
			pic := m.pageShared.cache.lines(f, cols, rows, mark, marked, focus, focused)
			a := m.textAreaIn(g)
			if a.rows == 0 {
				lines = append(lines, pic...)
				break
			}
			text := m.textAreaLines(a, tab)
			if a.right {
				sep := m.st.rule.Render("│")
				for i, l := range pic {
					t := ""
					if i < len(text) {
						t = text[i]
					}
					lines = append(lines, l+" "+sep+" "+t)
				}
				break
			}
			lines = append(lines, pic...)
			lines = append(lines, text...)
		}
	}
	return fitLines(lines, g.pw, g.ph)
}

// PageTextSource is the browser side of the page view's text mode (V): the
// tab's page as text lines (headings, links, buttons and fields by name,
// the text between them; never a field's value). Options.Page may
// implement it.
type PageTextSource interface {
	PageText(ctx context.Context, tab consent.TabID) ([]string, error)
}

// pageTextMsg is a read of a tab's text.
type pageTextMsg struct {
	tab   consent.TabID
	lines []string
	err   error
}

// pageTextEvery is how many ticks (seconds) the text stays before it is
// read again while shown.
const pageTextEvery = 3

// readPageText reads the shown tab's text off the update loop.
func (m *Model) readPageText() tea.Cmd {
	src, ok := m.opts.Page.(PageTextSource)
	tab := m.pageTab()
	if !ok || tab == "" {
		return nil
	}
	m.page.textAge = 0
	m.page.textReading = true
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lines, err := src.PageText(ctx, tab)
		return pageTextMsg{tab: tab, lines: lines, err: err}
	}
}

// pageTextUpdate takes a read, and on a tick reads again when due.
func (m *Model) pageTextUpdate(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case pageTextMsg:
		m.page.textReading = false
		if msg.tab != m.pageTab() {
			return nil
		}
		if msg.tab != m.page.textTab {
			m.page.textTop = 0
		}
		m.page.textTab, m.page.textLine, m.page.textErr = msg.tab, msg.lines, ""
		if msg.err != nil {
			m.page.textErr = msg.err.Error()
		}
	case tickMsg:
		if m.page.on && (m.page.text || m.textAreaIn(m.pageGeom()).rows > 0) {
			m.page.textAge++
			if m.page.textAge >= pageTextEvery || m.page.textTab != m.pageTab() {
				return m.readPageText()
			}
		}
	}
	return nil
}

// pageTextTrouble says why the page's text is not there. A read that
// times out is a page that does not answer yet (it is loading, or its
// navigation waits for a review): the next read, a few seconds on, tries
// again, so it is not put as an error.
func pageTextTrouble(err string) string {
	if strings.Contains(err, "timed out") || strings.Contains(err, "deadline exceeded") {
		return "No text yet: the page is not answering (still loading, or its navigation waits for your decision). Trying again."
	}
	return "page text: " + clean(err)
}

// pageTextLines is the shown tab's text wrapped to width w; while typing,
// the focused element's line says so.
func (m Model) pageTextLines(w int) []string {
	focus := ""
	if m.showsFocus() && m.page.focusTab == m.page.textTab {
		focus = m.page.focus.Label
	}
	var out []string
	for _, l := range m.page.textLine {
		if focus != "" && l == focus {
			l += focusTextMark
			focus = ""
		}
		out = append(out, wrap(clean(l), max(1, w-1))...)
	}
	return out
}

// pageMark is the focused action review's mark on tab, in CSS pixels: the
// target's box, or for a coordinate click the point.
func (m Model) pageMark(tab consent.TabID) (box [4]float64, ok bool) {
	f := m.state.Focused
	if f == nil || f.Tab != tab || f.Kind != consent.KindAction || f.Action == nil {
		return box, false
	}
	switch a := f.Action; {
	case a.Box != nil:
		return *a.Box, true
	case a.Coordinate:
		return [4]float64{a.X, a.Y, 0, 0}, true
	}
	return box, false
}

// pageCache keeps the last drawn picture: a frame is encoded once per
// size, not on every render.
type pageCache struct {
	mu    sync.Mutex
	key   pageCacheKey
	value []string
}

type pageCacheKey struct {
	seq        uint64
	img        image.Image
	cols, rows int
	mark       [4]float64
	marked     bool
	focus      [4]float64
	focused    bool
}

func (c *pageCache) lines(f pageFrame, cols, rows int, mark [4]float64, marked bool, focus [4]float64, focused bool) []string {
	k := pageCacheKey{seq: f.seq, img: f.img, cols: cols, rows: rows, mark: mark, marked: marked, focus: focus, focused: focused}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k == c.key && c.value != nil {
		return c.value
	}
	c.key, c.value = k, halfBlocks(f, cols, rows, mark, marked, focus, focused)
	return c.value
}

// markColour is the mark's colour in the page view (the overlay's, so
// both read as one).
var markColour = color.RGBA{R: 255, G: 0, B: 200, A: 255}

// focusColour outlines the field typed keys go to (the focus marker): a
// colour apart from the review's mark, so the two never read as one.
var focusColour = color.RGBA{R: 0, G: 230, B: 90, A: 255}

// halfBlocks draws f in cols×rows cells: each cell is two pixels, the
// upper as the foreground of ▀ and the lower as its background, each the
// average of the source pixels it covers. mark (x, y, w, h in CSS pixels;
// w = h = 0 for a point) is outlined on top, and focus, the focused
// field's box while typing, under it.
func halfBlocks(f pageFrame, cols, rows int, mark [4]float64, marked bool, focus [4]float64, focused bool) []string {
	if cols <= 0 || rows <= 0 || f.img == nil {
		return nil
	}
	px := make([]color.RGBA, cols*rows*2)
	b := f.img.Bounds()
	sx := float64(b.Dx()) / float64(cols)
	sy := float64(b.Dy()) / float64(rows*2)
	for y := 0; y < rows*2; y++ {
		y0 := b.Min.Y + int(float64(y)*sy)
		y1 := max(y0+1, b.Min.Y+int(float64(y+1)*sy))
		for x := 0; x < cols; x++ {
			x0 := b.Min.X + int(float64(x)*sx)
			x1 := max(x0+1, b.Min.X+int(float64(x+1)*sx))
			px[y*cols+x] = average(f.img, x0, y0, x1, y1)
		}
	}
	if f.cssW > 0 && f.cssH > 0 {
		kx, ky := float64(cols)/f.cssW, float64(rows*2)/f.cssH
		if focused {
			drawMark(px, cols, rows*2, focus, kx, ky, focusColour)
		}
		if marked {
			drawMark(px, cols, rows*2, mark, kx, ky, markColour)
		}
	}
	out := make([]string, rows)
	var sb strings.Builder
	for r := 0; r < rows; r++ {
		sb.Reset()
		var lastFg, lastBg color.RGBA
		first := true
		for x := 0; x < cols; x++ {
			fg, bg := px[(2*r)*cols+x], px[(2*r+1)*cols+x]
			if first || fg != lastFg {
				sb.WriteString("\x1b[38;2;")
				writeRGB(&sb, fg)
			}
			if first || bg != lastBg {
				sb.WriteString("\x1b[48;2;")
				writeRGB(&sb, bg)
			}
			first, lastFg, lastBg = false, fg, bg
			sb.WriteString("▀")
		}
		sb.WriteString("\x1b[m")
		out[r] = sb.String()
	}
	return out
}

func writeRGB(sb *strings.Builder, c color.RGBA) {
	var buf [16]byte
	sb.Write(strconv.AppendUint(buf[:0], uint64(c.R), 10))
	sb.WriteByte(';')
	sb.Write(strconv.AppendUint(buf[:0], uint64(c.G), 10))
	sb.WriteByte(';')
	sb.Write(strconv.AppendUint(buf[:0], uint64(c.B), 10))
	sb.WriteByte('m')
}

// average is the mean colour of img over [x0,x1)×[y0,y1), from at most
// 4×4 samples.
func average(img image.Image, x0, y0, x1, y1 int) color.RGBA {
	stepX, stepY := max(1, (x1-x0)/4), max(1, (y1-y0)/4)
	var r, g, b, n uint32
	yc, isYC := img.(*image.YCbCr)
	for y := y0; y < y1; y += stepY {
		for x := x0; x < x1; x += stepX {
			if isYC {
				yi, ci := yc.YOffset(x, y), yc.COffset(x, y)
				cr, cg, cb := color.YCbCrToRGB(yc.Y[yi], yc.Cb[ci], yc.Cr[ci])
				r, g, b = r+uint32(cr), g+uint32(cg), b+uint32(cb)
			} else {
				cr, cg, cb, _ := img.At(x, y).RGBA()
				r, g, b = r+cr>>8, g+cg>>8, b+cb>>8
			}
			n++
		}
	}
	if n == 0 {
		return color.RGBA{A: 255}
	}
	return color.RGBA{R: uint8(r / n), G: uint8(g / n), B: uint8(b / n), A: 255}
}

// drawMark outlines mark on the pixel grid (w×h pixels, kx/ky pixels per
// CSS pixel) in colour c: a box, or a cross for a point.
func drawMark(px []color.RGBA, w, h int, mark [4]float64, kx, ky float64, c color.RGBA) {
	set := func(x, y int) {
		if x >= 0 && y >= 0 && x < w && y < h {
			px[y*w+x] = c
		}
	}
	x0, y0 := int(mark[0]*kx), int(mark[1]*ky)
	if mark[2] <= 0 || mark[3] <= 0 {
		for d := -2; d <= 2; d++ {
			set(x0+d, y0)
			set(x0, y0+d)
		}
		return
	}
	x1, y1 := max(x0, int((mark[0]+mark[2])*kx+0.5)-1), max(y0, int((mark[1]+mark[3])*ky+0.5)-1)
	for x := x0; x <= x1; x++ {
		set(x, y0)
		set(x, y1)
	}
	for y := y0; y <= y1; y++ {
		set(x0, y)
		set(x1, y)
	}
}
