package tui

import (
	"context"
	"errors"
	"fmt"
	"image"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/screentest"
)

// fakePage is a PageSource that serves one picture per stream and
// records what reaches "the page".
type fakePage struct {
	mu      sync.Mutex
	started []consent.TabID
	active  int
	keys    []string
	clicks  [][2]float64
	changed chan struct{}
	img     image.Image
	fail    error // PageFrames fails at once with it
	// cssW×cssH is the viewport each frame shows; zero: 800×600.
	cssW, cssH float64
}

func newFakePage() *fakePage {
	return &fakePage{changed: make(chan struct{}, 64), img: screentest.BlueQuarter()}
}

func (p *fakePage) note() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *fakePage) PageFrames(ctx context.Context, tab consent.TabID, _, _ int, deliver func(image.Image, float64, float64)) error {
	p.mu.Lock()
	p.started = append(p.started, tab)
	fail := p.fail
	if fail == nil {
		p.active++
	}
	p.mu.Unlock()
	p.note()
	if fail != nil {
		return fail
	}
	cssW, cssH := p.cssW, p.cssH
	if cssW == 0 {
		cssW, cssH = 800, 600
	}
	deliver(p.img, cssW, cssH)
	<-ctx.Done()
	p.mu.Lock()
	p.active--
	p.mu.Unlock()
	p.note()
	return nil
}

func (p *fakePage) PageKey(_ context.Context, _ consent.TabID, key, text string) error {
	p.mu.Lock()
	p.keys = append(p.keys, key+"|"+text)
	p.mu.Unlock()
	p.note()
	return nil
}

func (p *fakePage) PageClick(_ context.Context, _ consent.TabID, x, y float64) error {
	p.mu.Lock()
	p.clicks = append(p.clicks, [2]float64{x, y})
	p.mu.Unlock()
	p.note()
	return nil
}

func (p *fakePage) until(t *testing.T, what string, cond func(*fakePage) bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		p.mu.Lock()
		ok := cond(p)
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-p.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// runner runs the commands Update returns, as bubbletea would, and hands
// their messages back.
type runner struct{ msgs chan tea.Msg }

func newRunner() *runner { return &runner{msgs: make(chan tea.Msg, 64)} }

func (r *runner) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				r.run(c)
			}
			return
		}
		if msg != nil {
			r.msgs <- msg
		}
	}()
}

// update steps m with msg and runs what it returns.
func (r *runner) update(m Model, msg tea.Msg) Model {
	tm, cmd := m.Update(msg)
	r.run(cmd)
	return tm.(Model)
}

// until feeds the page view's messages back into m until cond holds.
func (r *runner) until(t *testing.T, m Model, what string, cond func(Model) bool) Model {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond(m) {
		select {
		case msg := <-r.msgs:
			switch msg.(type) {
			case pageFrameMsg, pageEndedMsg, pageTextMsg, pageFocusMsg:
				m = r.update(m, msg)
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s:\n%s", what, screen(m))
		}
	}
	return m
}

func newPageModel(t *testing.T, s consent.State, w, h int, page *fakePage) (Model, *fakeService, *runner) {
	f := newFake(s)
	m := New(f, Options{Version: "v0.1.0", Now: fixedClock, Page: page})
	t.Cleanup(m.Close)
	r := newRunner()
	m = r.update(m, tea.WindowSizeMsg{Width: w, Height: h})
	return m, f, r
}

func hasFrame(m Model) bool { return m.page.frame.img != nil }

// v starts one stream of the selected tab and shows its picture in
// half-blocks of the picture's colours; v again stops it. Before v
// nothing streams.
func TestPageViewStreamsOnlyWhileShown(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		page := newFakePage()
		m, _, r := newPageModel(t, baseState(), size[0], size[1], page)
		if strings.Contains(screen(m), "Page view") || len(page.started) != 0 {
			t.Fatal("the page view is on before v")
		}
		m = r.update(m, press("v"))
		m = r.until(t, m, "the first frame", hasFrame)
		raw := m.View().Content
		if !strings.Contains(raw, "38;2;0;160;255") || !strings.Contains(raw, "48;2;255;255;255") || !strings.Contains(raw, "▀") {
			t.Errorf("%dx%d: no half-blocks in the picture's colours", size[0], size[1])
		}
		for i, l := range strings.Split(screen(m), "\n") {
			if width(l) > size[0] {
				t.Errorf("%dx%d: line %d is %d cells wide", size[0], size[1], i, width(l))
			}
		}
		if n := strings.Count(screen(m), "\n") + 1; n != size[1] {
			t.Errorf("%dx%d: %d lines", size[0], size[1], n)
		}
		if !strings.Contains(screen(m), "No review on screen") {
			t.Errorf("%dx%d: the page view pushed the review column off the screen:\n%s", size[0], size[1], screen(m))
		}
		page.until(t, "one stream of t1", func(p *fakePage) bool { return p.active == 1 && len(p.started) == 1 && p.started[0] == "t1" })
		m = r.update(m, press("v"))
		page.until(t, "the stream to stop", func(p *fakePage) bool { return p.active == 0 })
		if strings.Contains(screen(m), "Page view") {
			t.Error("the panel stayed after the second v")
		}
	}
}

// Selecting another tab moves the stream; closing the screen ends it.
func TestPageViewFollowsTheSelectionAndEndsWithTheScreen(t *testing.T) {
	page := newFakePage()
	m, _, r := newPageModel(t, baseState(), 120, 40, page)
	m = r.update(m, press("v"))
	page.until(t, "a stream of t1", func(p *fakePage) bool { return p.active == 1 })
	m = r.update(m, press("down"))
	page.until(t, "one stream of t2", func(p *fakePage) bool {
		return p.active == 1 && len(p.started) == 2 && p.started[1] == "t2"
	})
	m.Close()
	page.until(t, "no stream after Close", func(p *fakePage) bool { return p.active == 0 })
}

// Two screens on one engine: each has its own view; the one that did not
// press v draws and streams nothing.
func TestPageViewIsPerScreen(t *testing.T) {
	page := newFakePage()
	a, _, ra := newPageModel(t, baseState(), 120, 40, page)
	b, _, _ := newPageModel(t, baseState(), 120, 40, page)
	a = ra.update(a, press("v"))
	_ = ra.until(t, a, "a's frame", hasFrame)
	if strings.Contains(screen(b), "Page view") {
		t.Error("b shows a's page view")
	}
	page.mu.Lock()
	defer page.mu.Unlock()
	if page.active != 1 {
		t.Errorf("%d streams, want 1 (a's)", page.active)
	}
}

func takenOverState() consent.State {
	s := baseState()
	s.Conversations[0].Paused = true
	return s
}

// i outside a take-over refuses and sends nothing; during one every key
// but esc goes to the page (a never approves), and esc gives the keys
// back to the console.
func TestPageInputOnlyDuringTakeOver(t *testing.T) {
	page := newFakePage()
	s := withFocus(baseState(), actionReview(consent.Action{Type: consent.ActionClick, Ref: "e1", Role: "button", Name: "Go"}))
	m, f, r := newPageModel(t, s, 120, 40, page)
	m = r.update(m, press("v"))
	m = r.update(m, press("i"))
	if !strings.Contains(screen(m), "only during a take-over") {
		t.Fatalf("no refusal:\n%s", screen(m))
	}
	m = r.update(m, press("b"))
	m = r.update(m, press("h"))

	p := withFocus(takenOverState(), actionReview(consent.Action{Type: consent.ActionClick, Ref: "e1", Role: "button", Name: "Go"}))
	m = r.update(m, stateChangedMsg{state: p})
	m = r.update(m, press("i"))
	if !strings.Contains(screen(m), "TYPING INTO THE PAGE") {
		t.Fatalf("not in input mode:\n%s", screen(m))
	}
	for _, k := range []string{"a", "d", "tab", "q", "enter"} {
		m = r.update(m, press(k))
	}
	page.until(t, "five keys", func(p *fakePage) bool { return len(p.keys) == 5 })
	page.mu.Lock()
	got := strings.Join(page.keys, ",")
	page.mu.Unlock()
	if got != "|a,|d,Tab|,|q,Enter|" {
		t.Errorf("the page got %s", got)
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "decide") {
			t.Errorf("a key in input mode reached the console: %s", c)
		}
	}
	m = r.update(m, press("esc"))
	_ = r.update(m, press("b"))
	time.Sleep(100 * time.Millisecond)
	page.mu.Lock()
	defer page.mu.Unlock()
	if len(page.keys) != 5 {
		t.Errorf("a key after esc reached the page: %v", page.keys)
	}
}

// i during another operator's take-over says whose it is, and sends
// nothing: the keys are theirs.
func TestPageInputDuringAnotherOperatorsTakeOverSaysWhose(t *testing.T) {
	page := newFakePage()
	s := takenOverState()
	s.Conversations[0].PausedBy = "ana"
	s = withFocus(s, actionReview(consent.Action{Type: consent.ActionClick, Ref: "e1", Role: "button", Name: "Go"}))
	m, _, r := newPageModel(t, s, 120, 40, page)
	m = r.update(m, press("v"))
	m = r.update(m, press("i"))
	if !strings.Contains(screen(m), "ana has this take-over: i types only in a take-over of your own") {
		t.Fatalf("the refusal does not say whose take-over it is:\n%s", screen(m))
	}
	_ = r.update(m, press("b"))
	time.Sleep(50 * time.Millisecond)
	page.mu.Lock()
	defer page.mu.Unlock()
	if len(page.keys) != 0 {
		t.Errorf("a key reached the page during another operator's take-over: %v", page.keys)
	}
}

// A click on the picture clicks the matching page point; a click beside it
// and any click outside input mode reach nothing.
func TestPageClickMapsToThePagePoint(t *testing.T) {
	page := newFakePage()
	m, _, r := newPageModel(t, takenOverState(), 120, 40, page)
	m = r.update(m, press("v"))
	m = r.until(t, m, "the first frame", hasFrame)
	g := m.pageGeom()
	x0, y0, cols, rows := g.picture(m.page.frame)
	m = r.update(m, tea.MouseClickMsg{X: x0 + cols/4, Y: y0 + rows/4, Button: tea.MouseLeft})
	m = r.update(m, press("i"))
	m = r.update(m, tea.MouseClickMsg{X: x0 + cols + 1, Y: y0, Button: tea.MouseLeft})
	m = r.update(m, tea.MouseClickMsg{X: x0 + cols/4, Y: y0 + rows/4, Button: tea.MouseLeft})
	page.until(t, "a click", func(p *fakePage) bool { return len(p.clicks) >= 1 })
	time.Sleep(100 * time.Millisecond)
	page.mu.Lock()
	defer page.mu.Unlock()
	if len(page.clicks) != 1 {
		t.Fatalf("clicks %v, want one", page.clicks)
	}
	c := page.clicks[0]
	if c[0] < 180 || c[0] > 220 || c[1] < 130 || c[1] > 170 {
		t.Errorf("a click a quarter into the picture reached %v, want about 200,150", c)
	}
	if m.View().MouseMode != tea.MouseModeCellMotion {
		t.Error("input mode does not ask the terminal for clicks")
	}
}

// The focused action review's target box is outlined in the picture.
func TestPageViewMarksTheTarget(t *testing.T) {
	page := newFakePage()
	rv := actionReview(consent.Action{Type: consent.ActionClick, Ref: "e1", Role: "button", Name: "Go", Box: &[4]float64{400, 300, 200, 150}})
	m, _, r := newPageModel(t, withFocus(baseState(), rv), 120, 40, page)
	m = r.update(m, press("v"))
	m = r.until(t, m, "the first frame", hasFrame)
	if !strings.Contains(m.View().Content, "2;255;0;200") {
		t.Error("no mark in the picture")
	}
	m = r.update(m, stateChangedMsg{state: baseState()})
	if strings.Contains(m.View().Content, "2;255;0;200") {
		t.Error("the mark stayed after the review left")
	}
}

// A stream that fails (Chromium relaunching) shows why and is not
// restarted in a loop: once, then again only after pageRetry.
func TestPageViewFailedStreamRetriesLater(t *testing.T) {
	page := newFakePage()
	page.fail = errcode.Errorf(errcode.BrowserUnavailable, errcode.NextNone, "relaunching")
	m, _, r := newPageModel(t, baseState(), 120, 40, page)
	m = r.update(m, press("v"))
	m = r.until(t, m, "the error on screen", func(m Model) bool { return strings.Contains(screen(m), "relaunching") })
	time.Sleep(300 * time.Millisecond)
	for len(r.msgs) > 0 {
		m = r.update(m, <-r.msgs)
	}
	page.mu.Lock()
	n := len(page.started)
	page.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d starts within 300ms of a failure, want 1", n)
	}
	ended := m.page.ended
	if ended == nil {
		t.Fatal("the failed stream is not remembered")
	}
	_ = r.update(m, pageRetryMsg{ps: ended})
	page.until(t, "a second start after the retry", func(p *fakePage) bool { return len(p.started) == 2 })
}

// A conversation another operator took over stays theirs: i refuses on
// this screen.
func TestPageInputNotOnAnotherOperatorsTakeOver(t *testing.T) {
	page := newFakePage()
	s := takenOverState()
	s.Conversations[0].PausedBy = "ana"
	f := newFake(s)
	m := New(f, Options{Version: "v0.1.0", Now: fixedClock, Page: page, Operator: consent.Operator{Name: "bob"}, Remote: true})
	t.Cleanup(m.Close)
	r := newRunner()
	m = r.update(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m = r.update(m, press("tab"))
	m = r.update(m, press("i"))
	if !strings.Contains(screen(m), "only during a take-over") || m.page.input {
		t.Fatalf("bob typed into ana's take-over:\n%s", screen(m))
	}
}

// At 80×24 with the page view open, a fill review still shows the whole
// text to be typed: the picture yields rows to the review, so the one
// value the operator must read before a is never behind a scroll (issue
// 25 §3).
func TestPageViewYieldsToTheReview(t *testing.T) {
	text := "Please leave the parcel with the neighbour at number 12.\nThanks!"
	rv := actionReview(consent.Action{Type: consent.ActionFill, Ref: "e13", Role: "textbox", Name: "Delivery note", Text: text})
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m, _ := viewingPage(t, rv, size[0], size[1])
		s := screen(m)
		for _, want := range []string{"Please leave the parcel", "Thanks!", "a Allow once"} {
			if !strings.Contains(s, want) {
				t.Errorf("%dx%d: the fill review hides %q:\n%s", size[0], size[1], want, s)
			}
		}
		if strings.Contains(s, "lines 1-") {
			t.Errorf("%dx%d: the fill review scrolls:\n%s", size[0], size[1], s)
		}
		if !strings.Contains(s, "▀") {
			t.Errorf("%dx%d: no picture left:\n%s", size[0], size[1], s)
		}
	}
}

// The same for a site tool's input: at 80×24 with the page view open the
// demo's save_draft review showed its "input" heading and not the input
// (the eleventh walk).
func TestPageViewYieldsToASiteToolInput(t *testing.T) {
	rv := review(consent.KindToolCall, "Allow site tool call?", "Allow once")
	rv.ToolCall = &consent.ToolCall{ToolName: "save_draft", ToolTitle: "Save a draft", InputSummary: `{"title":"string(10)"}`, InputValues: "{\n  \"title\": \"Demo draft\"\n}"}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m, _ := viewingPage(t, rv, size[0], size[1])
		s := screen(m)
		for _, want := range []string{`"title": "Demo draft"`, "read-only", "a Allow once"} {
			if !strings.Contains(s, want) {
				t.Errorf("%dx%d: the site-tool review hides %q:\n%s", size[0], size[1], want, s)
			}
		}
		// At 80×24 not even a strip of picture leaves the input room, and
		// the review marks nothing on the page: the panel folds to its
		// title and says why. At 120×40 the picture stays.
		folded := strings.Contains(s, "folded: the review needs the room")
		if size[0] == 80 && (!folded || strings.Contains(s, "▀")) {
			t.Errorf("%dx%d: the panel did not fold for the review:\n%s", size[0], size[1], s)
		}
		if size[0] == 120 && (folded || !strings.Contains(s, "▀")) {
			t.Errorf("%dx%d: the picture did not stay:\n%s", size[0], size[1], s)
		}
	}
	// With the review gone the picture comes back.
	m, r := viewingPage(t, rv, 80, 24)
	m = r.update(m, stateChangedMsg{state: baseState()})
	if s := screen(m); strings.Contains(s, "folded") || !strings.Contains(s, "▀") {
		t.Errorf("the picture did not come back after the review:\n%s", s)
	}
}

// viewingPage is a w×h screen with review rv on it that pressed v and
// has the page view's first frame.
func viewingPage(t *testing.T, rv consent.Review, w, h int) (Model, *runner) {
	t.Helper()
	m, _, r := newPageModel(t, withFocus(baseState(), rv), w, h, newFakePage())
	m = r.update(m, press("v"))
	return r.until(t, m, "the first frame", hasFrame), r
}

// textPage is a page source that also reads the page's text.
type textPage struct{ *fakePage }

func (textPage) PageText(context.Context, consent.TabID) ([]string, error) {
	lines := []string{"# Sign in to the fixture", "[textbox] User name", "[button] Sign in"}
	for i := range 60 {
		lines = append(lines, fmt.Sprintf("paragraph line %d", i))
	}
	return lines, nil
}

// V shows the page's text in the page panel, readable where the picture
// is too coarse (issue 25 §11); ] scrolls it; V again is the picture.
func TestPageTextMode(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		page := textPage{newFakePage()}
		f := newFake(baseState())
		m := New(f, Options{Version: "v0.1.0", Now: fixedClock, Page: page})
		t.Cleanup(m.Close)
		r := newRunner()
		m = r.update(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m = r.update(m, press("V"))
		m = r.until(t, m, "the page text", func(m Model) bool { return strings.Contains(screen(m), "[button] Sign in") })
		s := screen(m)
		for _, want := range []string{"# Sign in to the fixture", "[textbox] User name", "V picture"} {
			if !strings.Contains(s, want) {
				t.Errorf("%dx%d: text mode lacks %q:\n%s", size[0], size[1], want, s)
			}
		}
		m = r.update(m, press("]"))
		if s := screen(m); strings.Contains(s, "# Sign in to the fixture") || !strings.Contains(s, "paragraph line") {
			t.Errorf("%dx%d: ] did not scroll the text:\n%s", size[0], size[1], s)
		}
		// V again is the picture (with the start of the text in the room
		// it leaves, not text mode's scrolled view).
		m = r.update(m, press("V"))
		if s := screen(m); strings.Contains(s, "V picture") || strings.Contains(s, "[ ] scroll · v hide") {
			t.Errorf("%dx%d: V again still shows text mode:\n%s", size[0], size[1], s)
		}
		// V on a closed view opens the text, whatever the view showed
		// last (the walk: V, v, V opened the picture).
		m = r.update(m, press("V"))
		m = r.update(m, press("v"))
		m = r.update(m, press("V"))
		if s := screen(m); !strings.Contains(s, "V picture") {
			t.Errorf("%dx%d: V on a closed view did not open the text:\n%s", size[0], size[1], s)
		}
	}
}

// A picture too coarse to read the page's text says, in the panel, that V
// shows it as text (issue 25): whole at every width, gone in text mode,
// absent where the picture is fine enough to read and where this console
// cannot read the page's text (no claim V cannot keep).
func TestPageViewPointsAtTextWhenThePictureIsTooSmall(t *testing.T) {
	open := func(t *testing.T, src PageSource, w, h int) (Model, *runner) {
		t.Helper()
		m := New(newFake(baseState()), Options{Version: "v0.1.0", Now: fixedClock, Page: src})
		t.Cleanup(m.Close)
		r := newRunner()
		m = r.update(m, tea.WindowSizeMsg{Width: w, Height: h})
		m = r.update(m, press("v"))
		return r.until(t, m, "the first frame", hasFrame), r
	}
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}} {
		w, h := size[0], size[1]
		m, r := open(t, textPage{newFakePage()}, w, h)
		// Where the picture leaves room, the room shows the page's text
		// (beside a stacked panel's picture, under a side panel's) and
		// points at V for the rest of it.
		m = r.until(t, m, "the page's text beside the picture", func(m Model) bool { return strings.Contains(screen(m), "[button] Sign in") })
		s := screen(m)
		if !strings.Contains(s, "page text · V shows all of it") || !strings.Contains(s, "# Sign in to the fixture") || !strings.Contains(s, "more lines: V") {
			t.Errorf("%dx%d: the room the picture leaves does not show the page's text and point at V:\n%s", w, h, s)
		}
		if strings.Contains(s, "press V") {
			t.Errorf("%dx%d: a hint line as well as the text:\n%s", w, h, s)
		}
		for i, l := range strings.Split(s, "\n") {
			if width(l) > w {
				t.Errorf("%dx%d: line %d is %d cells wide", w, h, i, width(l))
			}
		}
		m = r.update(m, press("V"))
		m = r.until(t, m, "the page text", func(m Model) bool { return strings.Contains(screen(m), "[button] Sign in") })
		if strings.Contains(screen(m), "press V") {
			t.Errorf("%dx%d: text mode still points at V:\n%s", w, h, screen(m))
		}

		m, _ = open(t, newFakePage(), w, h)
		if strings.Contains(screen(m), "press V") {
			t.Errorf("%dx%d: a console that cannot read the text points at V:\n%s", w, h, screen(m))
		}
	}
	// A 40-pixel-wide page in 59 columns is readable: no hint.
	fine := newFakePage()
	fine.cssW, fine.cssH = 40, 30
	m, _ := open(t, textPage{fine}, 120, 40)
	if s := screen(m); strings.Contains(s, "press V") || !strings.Contains(s, "▀") {
		t.Errorf("a readable picture points at V:\n%s", s)
	}
}

// focusPage is a sign-in page whose focus moves with Tab: first nothing
// has focus (the fixture's sign-in page has no autofocus), then the user
// name field, then the password field. It reads its text too.
type focusPage struct{ *fakePage }

func (p focusPage) PageFocus(context.Context, consent.TabID) (PageFocus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tabs := 0
	for _, k := range p.keys {
		if k == "Tab|" {
			tabs++
		}
	}
	switch tabs {
	case 0:
		return PageFocus{}, nil
	case 1:
		return PageFocus{Label: "[textbox] User name", Box: [4]float64{450, 40, 300, 30}, HasBox: true}, nil
	default:
		return PageFocus{Label: "[textbox] Password", Box: [4]float64{450, 90, 300, 30}, HasBox: true}, nil
	}
}

func (focusPage) PageText(context.Context, consent.TabID) ([]string, error) {
	return []string{"# Sign in", "[textbox] User name", "[textbox] Password", "[button] Sign in"}, nil
}

// While typing into the page (i) the panel says where keys go: nothing
// focused says so and how to fix it; Tab names the field, counts what
// reached it (never what), outlines it in the picture and marks its line
// in the page text. Issue 25: a sign-in through the page view was blind.
func TestPageInputShowsWhereKeysGo(t *testing.T) {
	for _, size := range [][2]int{{100, 30}, {80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			page := focusPage{newFakePage()}
			f := newFake(takenOverState())
			m := New(f, Options{Version: "v0.1.0", Now: fixedClock, Page: page})
			t.Cleanup(m.Close)
			r := newRunner()
			m = r.update(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			m = r.update(m, press("v"))
			m = r.until(t, m, "the first frame", hasFrame)
			if strings.Contains(screen(m), "keys go to") {
				t.Fatalf("a focus line before i:\n%s", screen(m))
			}
			m = r.update(m, press("i"))
			m = r.until(t, m, "no focus said", func(m Model) bool { return strings.Contains(screen(m), "no field has focus") })
			// The key help says where keys go now, not the console's keys.
			if lines := strings.Split(strings.TrimRight(screen(m), "\n"), "\n"); !strings.Contains(lines[len(lines)-1], "esc stops") || strings.Contains(lines[len(lines)-1], "t take") {
				t.Errorf("while typing the key help still offers the console's keys: %q", lines[len(lines)-1])
			}
			// The line keeps whole clauses: it once read "press tab or cli…".
			if !strings.Contains(screen(m), "no field has focus: press tab or click a field") && !strings.Contains(screen(m), "no field has focus; press tab or click a field") {
				t.Errorf("the focus line lost how to give a field focus:\n%s", screen(m))
			}
			for _, l := range strings.Split(screentest.RightOfDivider(screen(m)), "\n") {
				if strings.Contains(l, "no field has focus") && (strings.Contains(l, "…") || strings.Contains(l, "press tab") && !strings.Contains(l, "press tab or click a field")) {
					t.Errorf("the focus line is cut: %q", l)
				}
			}
			if strings.Contains(m.View().Content, "2;0;230;90") {
				t.Error("a focus outline with nothing focused")
			}
			m = r.update(m, press("tab"))
			m = r.until(t, m, "the user name field", func(m Model) bool { return strings.Contains(screen(m), "keys go to: [textbox] User name") })
			for _, k := range []string{"d", "e", "m", "o"} {
				m = r.update(m, press(k))
			}
			if s := screen(m); !strings.Contains(s, "4 characters typed here") || strings.Contains(s, "demo") {
				t.Errorf("the count of typed keys is wrong or shows them:\n%s", s)
			}
			// V typed now would go into the field: the hint says esc first.
			for _, l := range strings.Split(screentest.RightOfDivider(screen(m)), "\n") {
				if strings.Contains(l, "V") && strings.Contains(l, "as text") && !strings.Contains(l, "esc") {
					t.Errorf("while typing, the hint sends V to the page: %q", l)
				}
			}
			if !strings.Contains(m.View().Content, "2;0;230;90") {
				t.Errorf("the focused field is not outlined in the picture:\n%s", screen(m))
			}
			// The click map follows the picture under the focus line (and
			// the line pointing at V, when no room beside or under the
			// picture shows the page's text).
			g := m.pageGeom()
			x0, y0, cols, rows := g.picture(m.page.frame)
			want := 2
			if g.textHint {
				want = 3
			}
			if y0 != g.y0+want || g.textHint == (m.textAreaIn(g).rows > 0) {
				t.Errorf("the picture starts %d rows under the panel's top (text hint %v, text area %+v), want %d", y0-g.y0, g.textHint, m.textAreaIn(g), want)
			}
			m = r.update(m, tea.MouseClickMsg{X: x0 + cols/4, Y: y0 + rows/4, Button: tea.MouseLeft})
			page.until(t, "a click", func(p *fakePage) bool { return len(p.clicks) == 1 })
			page.mu.Lock()
			c := page.clicks[0]
			page.mu.Unlock()
			if c[0] < 150 || c[0] > 250 || c[1] < 100 || c[1] > 200 {
				t.Errorf("a click a quarter into the picture reached %v, want about 200,150", c)
			}
			m = r.update(m, press("tab"))
			m = r.until(t, m, "the password field", func(m Model) bool {
				s := screen(m)
				return strings.Contains(s, "keys go to: [textbox] Password") && strings.Contains(s, "nothing typed here yet")
			})
			m = r.update(m, press("V"))
			if strings.Contains(screen(m), "V picture") {
				t.Fatalf("V typed into the page became a console key:\n%s", screen(m))
			}
			m = r.update(m, press("esc"))
			if s := screen(m); strings.Contains(s, "keys go to") {
				t.Errorf("the focus line stayed after esc:\n%s", s)
			}
			// Text mode while typing marks the focused field's line.
			m = r.update(m, press("V"))
			m = r.update(m, press("i"))
			m = r.until(t, m, "the marked line", func(m Model) bool {
				return strings.Contains(screen(m), "[textbox] Password  ◀ keys go here")
			})
			if strings.Contains(screen(m), "User name  ◀") {
				t.Errorf("the wrong line is marked:\n%s", screen(m))
			}
		})
	}
}

// With the page view open, the panel's title line and the key help drop
// or shorten whole parts in one order to fit, and never cut a key or a
// word (issue 25: at 120 columns the footer ended "tab conv …", at 80 the
// title "Sessio…"). Like TestHeaderFitsWithoutCuts: every word shown is
// a word of the full line, and what the operator acts on stays.
func TestPageViewTitleAndFooterFitWithoutCuts(t *testing.T) {
	const fullTitle = "Page view · tab_65de28f125 Session active v hide · V text · i type (take-over only)"
	fullKeys := map[string]bool{}
	for _, k := range append(defaultKeyMap().NarrowHelp(), defaultKeyMap().ShortHelp()...) {
		fullKeys[k.Help().Key+" "+k.Help().Desc] = true
	}
	fullKeys["q leave"] = true // an SSH screen's q
	for _, c := range []struct {
		w, h       int
		title      []string // what the panel's title keeps
		footer     []string // what the key help keeps
		remote     bool
		pageTitled string
	}{
		{80, 24, []string{"Page view · tab_65de28f125 Session active", "v hide · V text · i type"}, []string{"t take", "n tokens", "tab conv", "↵ details", "? help", "q quit"}, false, "Session active"},
		{100, 30, []string{"Page view · tab_65de28f125 Session active", "v hide · V text · i type (take-over only)"}, []string{"t take", "n tokens", "tab conv", "↵ details", "? help", "q quit"}, false, "Session active"},
		// From 120 columns the key help spans the screen under the panel.
		{120, 40, []string{"Page view · Session active", "v hide · V text · i type"}, []string{"t take", "r resume", "x stop", "n tokens", "g next", "tab conv", "↵ details", "? help", "q quit"}, false, "Session active"},
		{120, 40, []string{"Page view · Session active", "v hide · V text · i type"}, []string{"t take", "r resume", "x stop", "g next", "tab conv", "↵ details", "? help", "q leave"}, true, "Session active"},
		{160, 48, []string{"Page view · tab_65de28f125 Session active", "v hide · V text · i type (take-over only)"}, []string{"t take over", "r resume", "x stop", "n tokens", "tab next conv", "? help", "q quit"}, false, "Session active"},
	} {
		t.Run(fmt.Sprintf("%dx%d remote=%v", c.w, c.h, c.remote), func(t *testing.T) {
			s := baseState()
			s.Conversations[0].Tabs[0].ID = "tab_65de28f125"
			s.Conversations[0].Tabs[0].Title = c.pageTitled
			s.Selection.Tab = "tab_65de28f125"
			m := New(newFake(s), Options{Version: "v0.1.0", Now: fixedClock, Page: newFakePage(), Remote: c.remote})
			t.Cleanup(m.Close)
			r := newRunner()
			m = r.update(m, tea.WindowSizeMsg{Width: c.w, Height: c.h})
			m = r.update(m, press("v"))
			m = r.until(t, m, "the first frame", hasFrame)
			scr := strings.TrimRight(screen(m), "\n")
			lines := strings.Split(scr, "\n")
			for i, l := range lines {
				if width(l) > c.w {
					t.Errorf("line %d is %d cells wide: %q", i, width(l), l)
				}
			}

			title := ""
			for _, l := range strings.Split(screentest.RightOfDivider(scr), "\n") {
				if strings.Contains(l, "Page view") {
					title = strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "─"))
					break
				}
			}
			words := strings.Fields(fullTitle)
			for _, wd := range strings.Fields(title) {
				if !slices.Contains(words, wd) && wd != "…" && strings.Trim(wd, "─") != "" {
					t.Errorf("the panel's title shows %q, no whole word of %q: %q", wd, fullTitle, title)
				}
			}
			for _, k := range c.title {
				if !strings.Contains(title, k) {
					t.Errorf("the panel's title lost %q: %q\n%s", k, title, scr)
				}
			}

			foot := strings.TrimSpace(lines[len(lines)-1])
			if strings.Contains(foot, "│") {
				t.Errorf("the key help shares its line with the panel: %q", foot)
			}
			// The header keeps the version and the browser's parenthesis
			// beside the panel as without it (the walk saw them go).
			if c.w >= pageSideWidth && (!strings.Contains(lines[0], "tabwarden v0.1.0") || strings.Contains(lines[0], "│")) {
				t.Errorf("the header lost the version or shares its line with the panel: %q", lines[0])
			}
			if strings.Contains(foot, "…") {
				t.Errorf("the key help is cut: %q", foot)
			}
			for _, item := range strings.Split(foot, "  ") {
				if !fullKeys[strings.TrimSpace(item)] {
					t.Errorf("the key help shows %q, not a whole key: %q", item, foot)
				}
			}
			for _, k := range c.footer {
				if !strings.Contains(foot, k) {
					t.Errorf("the key help lost %q: %q", k, foot)
				}
			}
			if c.remote && strings.Contains(foot, "n tokens") {
				t.Errorf("an SSH screen's key help offers n: %q", foot)
			}
		})
	}
}

// The panel's title drops its parts in the order docs/decisions.md gives
// ("Issue 25"), down to "Page view" and the first key.
func TestPanelTitleOrder(t *testing.T) {
	const keys = "v hide · V text · i type (take-over only)"
	var got []string
	for w := 90; w >= 10; w-- {
		title, k := panelTitle("tab_1", "A long page title", keys, false, w)
		line := title + " ─ " + k
		if len(got) == 0 || got[len(got)-1] != line {
			got = append(got, line)
		}
	}
	want := []string{
		"Page view · tab_1 A long page title ─ v hide · V text · i type (take-over only)",
		"Page view · tab_1 A long page title ─ v hide · V text · i type",
		"Page view · A long page title ─ v hide · V text · i type",
		"Page view · A long page …",
		"Page view · A long …",
		"Page view · A …",
		"Page view ─ v hide · V text · i type",
		"Page view ─ v hide · V text",
		"Page view ─ v hide",
	}
	for i := range want {
		if strings.HasSuffix(want[i], "…") {
			want[i] += " ─ v hide · V text · i type"
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the title's forms, widest first:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Typing keeps its keys whole: esc is how typing stops.
	if _, k := panelTitle("tab_1", "Title", "TYPING INTO THE PAGE · esc stops", true, 30); k != "TYPING INTO THE PAGE · esc stops" {
		t.Errorf("typing's keys shortened to %q", k)
	}
}

// TestReviewFromLineDropsWholeParts: with the page view open the review's
// "from" line keeps the conversation whole and drops the page title's
// words, then the tab, never cutting a word (the walk saw "demo age…").
func TestReviewFromLineDropsWholeParts(t *testing.T) {
	const conv = "claude-code · Claude Code"
	const pageTitle = "Drafts — site tools and other long words for a title"
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			s := withFocus(baseState(), review(consent.KindNavigation, "Allow website navigation?", "Allow origin in this tab"))
			s.Conversations[0].Tabs[0].ID = "tab_b087b534de"
			s.Conversations[0].Tabs[0].Title = pageTitle
			s.Selection.Tab = "tab_b087b534de"
			s.Queue[0].Tab = "tab_b087b534de"
			s.Focused = &s.Queue[0]
			m := New(newFake(s), Options{Version: "v0.1.0", Now: fixedClock, Page: newFakePage()})
			t.Cleanup(m.Close)
			r := newRunner()
			m = r.update(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			m = r.update(m, press("v"))
			m = r.until(t, m, "the first frame", hasFrame)
			from := ""
			for _, l := range strings.Split(screen(m), "\n") {
				for _, seg := range strings.Split(l, "│") {
					if f := strings.TrimSpace(seg); strings.HasPrefix(f, "from ") {
						from = f
					}
				}
			}
			if !strings.Contains(from, conv) {
				t.Fatalf("the from line lost the conversation: %q\n%s", from, screen(m))
			}
			words := strings.Fields("from " + conv + " tab tab_b087b534de " + pageTitle)
			for _, wd := range strings.Fields(from) {
				if !slices.Contains(words, wd) && wd != "…" {
					t.Errorf("the from line cuts a word, %q: %q", wd, from)
				}
			}
		})
	}
}

// slowTextPage is a page whose text read times out, as a tab whose
// navigation waits for a review does.
type slowTextPage struct{ *fakePage }

func (slowTextPage) PageText(context.Context, consent.TabID) ([]string, error) {
	return nil, errors.New("timeout: read the page's text: timed out")
}

// A text read that times out is said as a page not answering yet, not as
// a raw error (the walk saw "page text: timeout: … timed out").
func TestPageTextTimeoutIsNotAnError(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m := New(newFake(baseState()), Options{Version: "v0.1.0", Now: fixedClock, Page: slowTextPage{newFakePage()}})
		t.Cleanup(m.Close)
		r := newRunner()
		m = r.update(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m = r.update(m, press("v"))
		m = r.until(t, m, "the text area's answer", func(m Model) bool { return strings.Contains(screen(m), "No text yet") })
		if s := screen(m); strings.Contains(s, "timed out") {
			t.Errorf("%dx%d: the raw timeout is on screen:\n%s", size[0], size[1], s)
		}
		m = r.update(m, press("V"))
		r.until(t, m, "text mode's answer", func(m Model) bool { return strings.Contains(squash(screen(m)), "the page is not answering") })
	}
}

// The page view offers i plainly during this screen's own take-over and
// marks it "(take-over only)" elsewhere, including another operator's
// take-over (the fourteenth walk saw the mark where i worked and not
// where it was refused).
func TestPageViewSaysWhereITypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   consent.State
		mark bool
	}{
		{"no take-over", baseState(), true},
		{"own take-over", takenOverState(), false},
		{"another's take-over", func() consent.State { s := takenOverState(); s.Conversations[0].PausedBy = "ana"; return s }(), true},
	} {
		m, _, r := newPageModel(t, tc.st, 160, 40, newFakePage())
		m = r.update(m, press("v"))
		m = r.until(t, m, "the first frame", hasFrame)
		if got := strings.Contains(screen(m), "i type (take-over only)"); got != tc.mark {
			t.Errorf("%s: \"(take-over only)\" shown %v, want %v:\n%s", tc.name, got, tc.mark, screen(m))
		}
	}
}
