package dom

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Action limits (design.md §5).
const (
	MaxFillChars = 8000
	MaxScroll    = 1200
)

// Action is browser_act's action argument.
type Action struct {
	Type string `json:"type"` // click, fill, select, key, scroll
	Ref  string `json:"ref,omitempty"`
	// X and Y are viewport CSS pixels: click {x,y} and scroll's point.
	X *float64 `json:"x,omitempty"`
	Y *float64 `json:"y,omitempty"`
	// Text replaces a fill target's content; empty clears it.
	Text   string  `json:"text,omitempty"`
	Value  string  `json:"value,omitempty"`
	Label  string  `json:"label,omitempty"`
	Key    string  `json:"key,omitempty"`
	DeltaY float64 `json:"deltaY,omitempty"`
}

// Target is the element an action will touch, as the review shows it. It
// is read live from the page at Prepare; Role and Name are site content.
type Target struct {
	Ref       string `json:"ref"`
	Role      string `json:"role"`
	Name      string `json:"name"`
	Disabled  bool   `json:"disabled,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
	// What the consent engine weighs for scoped grants (design.md §4): the
	// target's autocomplete attribute and name/id attribute, and whether
	// the step leaves the page's origin. Site content, for the engine only.
	Autocomplete string `json:"autocomplete,omitempty"`
	Field        string `json:"field,omitempty"`
	CrossOrigin  bool   `json:"crossOrigin,omitempty"`
}

// Receipt is a successful dispatch: the input reached the page, what it did
// is for the agent to observe or verify.
type Receipt struct {
	Dispatched bool   `json:"dispatched"`
	Outcome    string `json:"outcome"`
	Next       string `json:"next"`
}

// Prepared is a validated action waiting for its gate. Exactly one of
// Dispatch and Release must follow; until then the observation's clock is
// stopped, so the operator's review time does not age it.
type Prepared struct {
	Action Action
	// Target is the element the action touches: the ref's element, the
	// focused element for key, the element under the point for click
	// {x,y} (informational: the pixels decide). Nil for scroll, or when
	// nothing is focused or under the point.
	Target *Target
	// Point is the viewport point of click {x,y} and scroll.
	Point *[2]float64
	// Box is Target's border box (x, y, width, height in CSS pixels of
	// the viewport) when it has a ref and is rendered, for the operator's
	// mark of the review (box.go).
	Box *[4]float64

	held
}

type keyDef struct {
	key, code string
	vk        int
	text      string
}

var keys = map[string]keyDef{
	"enter":      {"Enter", "Enter", 13, "\r"},
	"tab":        {"Tab", "Tab", 9, ""},
	"escape":     {"Escape", "Escape", 27, ""},
	"arrowup":    {"ArrowUp", "ArrowUp", 38, ""},
	"arrowdown":  {"ArrowDown", "ArrowDown", 40, ""},
	"arrowleft":  {"ArrowLeft", "ArrowLeft", 37, ""},
	"arrowright": {"ArrowRight", "ArrowRight", 39, ""},
	"backspace":  {"Backspace", "Backspace", 8, ""},
	"space":      {" ", "Space", 32, " "},
	"pageup":     {"PageUp", "PageUp", 33, ""},
	"pagedown":   {"PageDown", "PageDown", 34, ""},
	"home":       {"Home", "Home", 36, ""},
	"end":        {"End", "End", 35, ""},
}

func lookupKey(k string) (keyDef, bool) {
	n := strings.ToLower(strings.TrimSpace(k))
	switch n {
	case "esc":
		n = "escape"
	case " ":
		n = "space"
	case "up", "down", "left", "right":
		n = "arrow" + n
	}
	d, ok := keys[n]
	return d, ok
}

func invalid(format string, args ...any) error {
	return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, format, args...)
}

// validate checks the action's shape; nothing here touches the page.
func validate(a Action) error {
	hasXY := a.X != nil || a.Y != nil
	if hasXY && (a.X == nil || a.Y == nil) {
		return invalid("x and y go together")
	}
	switch a.Type {
	case "click":
		if (a.Ref == "") == !hasXY {
			return invalid("click takes either ref or x,y")
		}
	case "fill":
		if a.Ref == "" {
			return invalid("fill needs ref")
		}
		if utf8.RuneCountInString(a.Text) > MaxFillChars {
			return invalid("fill text is longer than %d characters", MaxFillChars)
		}
	case "select":
		if a.Ref == "" {
			return invalid("select needs ref")
		}
		if a.Value == "" && a.Label == "" {
			return invalid("select needs value or label")
		}
	case "key":
		if _, ok := lookupKey(a.Key); !ok {
			return errcode.Errorf(errcode.InvalidKey, errcode.NextNone,
				"key must be one of Enter, Tab, Escape, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Backspace, Space, PageUp, PageDown, Home, End")
		}
	case "scroll":
		if math.IsNaN(a.DeltaY) || a.DeltaY < -MaxScroll || a.DeltaY > MaxScroll || a.DeltaY == 0 {
			return errcode.Errorf(errcode.InvalidScroll, errcode.NextNone, "deltaY must be non-zero and within [-%d, %d]", MaxScroll, MaxScroll)
		}
	default:
		return invalid("unknown action type %q (click, fill, select, key, scroll)", a.Type)
	}
	return nil
}

type jsErr struct {
	Err    string `json:"err"`
	Detail string `json:"detail"`
}

func (j jsErr) toError(ref string) error {
	if j.Err == "" {
		return nil
	}
	msg := j.Detail
	var code errcode.Code
	next := errcode.NextObserve
	switch j.Err {
	case "stale_element":
		code, msg = errcode.StaleElement, "element "+ref+" is no longer in the page"
	case "sign_in_required":
		code, msg, next = errcode.SignInRequired, "password, one-time-code and file inputs are the operator's: ask for a take-over (browser_handoff)", errcode.NextNone
	case "element_disabled":
		code, msg = errcode.ElementDisabled, "disabled: "+msg
	case "element_obscured":
		code, msg = errcode.ElementObscured, "another element is on top of "+ref+": "+msg
	case "element_outside_viewport":
		code, msg = errcode.ElementOutsideViewport, "not inside the viewport after scrolling: "+msg
	case "not_editable":
		code, msg = errcode.NotEditable, "not a text field, textarea or contenteditable: "+msg
	default:
		code, next = errcode.InvalidAction, errcode.NextNone
	}
	return errcode.Errorf(code, next, "%s", msg)
}

// Prepare validates action a against observation obsID and resolves its
// target for the review. It returns stale_observation, stale_element and the
// other design.md §5 codes that can be known before the gate; Dispatch re-checks
// everything after it.
func (t *Tab) Prepare(ctx context.Context, obsID string, a Action) (*Prepared, error) {
	if err := validate(a); err != nil {
		return nil, err
	}
	o, err := t.freshObservation(ctx, obsID)
	if err != nil {
		return nil, err
	}
	p := &Prepared{Action: a}
	if a.Ref != "" {
		var d struct {
			jsErr
			Role      string `json:"role"`
			Name      string `json:"name"`
			Sensitive bool   `json:"sensitive"`
			Disabled  bool   `json:"disabled"`
			Editable  bool   `json:"editable"`
			ReadOnly  bool   `json:"readOnly"`
			Tag       string `json:"tag"`

			Autocomplete string `json:"autocomplete"`
			Field        string `json:"field"`
			CrossOrigin  bool   `json:"crossOrigin"`
		}
		if err := t.runJSON(ctx, &d, "target", a.Ref); err != nil {
			return nil, cdpedge.Failed(ctx, "prepare", err)
		}
		if err := d.toError(a.Ref); err != nil {
			return nil, err
		}
		p.Target = &Target{Ref: a.Ref, Role: d.Role, Name: d.Name, Disabled: d.Disabled, Sensitive: d.Sensitive,
			Autocomplete: d.Autocomplete, Field: d.Field, CrossOrigin: d.CrossOrigin}
		switch {
		case d.Sensitive:
			return nil, jsErr{Err: "sign_in_required"}.toError(a.Ref)
		case d.Disabled:
			return nil, jsErr{Err: "element_disabled", Detail: d.Role + " " + quote(d.Name)}.toError(a.Ref)
		case a.Type == "fill" && (!d.Editable || d.ReadOnly):
			return nil, jsErr{Err: "not_editable", Detail: d.Role + " " + quote(d.Name)}.toError(a.Ref)
		case a.Type == "select":
			var s jsErr
			if err := t.runJSON(ctx, &s, "select", a.Ref, a.Value, a.Label, true); err != nil {
				return nil, cdpedge.Failed(ctx, "prepare", err)
			}
			if err := s.toError(a.Ref); err != nil {
				return nil, err
			}
		}
	}
	if a.X != nil {
		x, y := *a.X, *a.Y
		if a.Type == "click" && o.image == nil {
			return nil, errcode.Errorf(errcode.ImageRequired, errcode.NextObserve, "click {x,y} needs an observation taken with includeImage")
		}
		if x < 0 || y < 0 || x >= o.state.VW || y >= o.state.VH {
			return nil, errcode.Errorf(errcode.OutsideViewport, errcode.NextNone, "point %.0f,%.0f is outside the %.0fx%.0f viewport", x, y, o.state.VW, o.state.VH)
		}
		p.Point = &[2]float64{x, y}
	} else if a.Type == "scroll" {
		p.Point = &[2]float64{math.Floor(o.state.VW / 2), math.Floor(o.state.VH / 2)}
	}
	// For key and click {x,y} the review shows what the input goes to: the
	// focused element, or the element under the point (in this frame).
	var brief *Target
	switch {
	case a.Type == "key":
		brief = &Target{}
		if err := t.runJSON(ctx, brief, "focused"); err != nil {
			return nil, cdpedge.Failed(ctx, "prepare", err)
		}
		if brief.Sensitive {
			return nil, jsErr{Err: "sign_in_required"}.toError("")
		}
	case a.Type == "click" && p.Point != nil:
		brief = &Target{}
		if err := t.runJSON(ctx, brief, "at", p.Point[0], p.Point[1]); err != nil {
			return nil, cdpedge.Failed(ctx, "prepare", err)
		}
	}
	if brief != nil && brief.Ref != "" {
		p.Target = brief
	}
	if p.Target != nil && p.Target.Ref != "" {
		p.Box = t.box(ctx, p.Target.Ref)
	}
	if a.Type == "click" {
		t.overlayOn(ctx) // the cursor's domains; failure only costs the cursor
	}
	p.held = t.hold(o)
	return p, nil
}

func (t *Tab) focusSensitive(ctx context.Context) (bool, error) {
	s, err := t.run(ctx, "focusSensitive")
	if err != nil {
		return false, err
	}
	return s == "true", nil
}

// Release ends a Prepared that will not be dispatched (denied, cancelled):
// the observation's clock runs again and the observation is not consumed.
func (p *Prepared) Release() { p.release() }

// Dispatch runs the prepared action once. It consumes the observation
// whether or not it succeeds, re-checks freshness and the target, then sends
// the input. The Receipt says dispatched; an error before any input reached
// the page has Dispatched false, any error after it has Dispatched and
// MayHaveChangedState true. Nothing is retried.
func (p *Prepared) Dispatch(ctx context.Context) (Receipt, error) {
	t := p.tab
	if err := p.use(ctx, "action"); err != nil {
		return Receipt{}, err
	}
	a := p.Action
	var err error
	switch a.Type {
	case "click":
		err = t.click(ctx, p)
	case "fill":
		err = t.fill(ctx, a)
	case "select":
		err = t.choose(ctx, a)
	case "key":
		err = t.key(ctx, a)
	case "scroll":
		err = t.wheel(ctx, p)
	}
	if err != nil && t.hasEnded() {
		// The tab closed under the input (a page may close itself on a
		// click): the input may have been what closed it.
		return Receipt{}, cdpedge.Dispatched(errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "the tab closed during the %s", a.Type))
	}
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{Dispatched: true, Outcome: "not_yet_verified", Next: "observe"}, nil
}

func (t *Tab) click(ctx context.Context, p *Prepared) error {
	var x, y float64
	if p.Point != nil {
		x, y = p.Point[0], p.Point[1]
		now, err := t.shoot(ctx, p.obs.clip)
		if err != nil {
			return cdpedge.Failed(ctx, "click", err)
		}
		same, err := samePixels(p.obs.image, now, x, y)
		if err != nil {
			return cdpedge.Failed(ctx, "click", err)
		}
		if !same {
			return errcode.Errorf(errcode.PageChanged, errcode.NextObserve, "the page looks different from the observation's image; observe again")
		}
	} else {
		var r struct {
			jsErr
			X float64 `json:"x"`
			Y float64 `json:"y"`
		}
		if err := t.runJSON(ctx, &r, "point", p.Action.Ref); err != nil {
			return cdpedge.Failed(ctx, "click", err)
		}
		if err := r.toError(p.Action.Ref); err != nil {
			return err
		}
		x, y = r.X, r.Y
	}
	t.inputStarts()
	pg, cancel := t.call(ctx)
	defer cancel()
	one, zero := 1, 0
	if err := t.hover(ctx, x, y); err != nil {
		return cdpedge.AfterInput(ctx, "click", err)
	}
	// The cursor shows from the press until cursorShown after the release,
	// so the operator sees the click land. It is drawn alongside the input,
	// once the first input event is out, not before it: the highlight is a
	// CDP round trip of its own (tens of ms under load) and the operator's
	// key must reach the page without waiting for eye candy (gate latency,
	// issue 5; at most two round trips before the input, issue 12).
	cursor := make(chan func(), 1)
	go func() { cursor <- t.drawCursor(ctx, x, y) }()
	defer func() { (<-cursor)() }()
	for _, ev := range []proto.InputDispatchMouseEvent{
		{Type: proto.InputDispatchMouseEventTypeMousePressed, X: x, Y: y, Button: proto.InputMouseButtonLeft, Buttons: &one, ClickCount: 1},
		{Type: proto.InputDispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: proto.InputMouseButtonLeft, Buttons: &zero, ClickCount: 1},
	} {
		if err := ev.Call(pg); err != nil {
			return cdpedge.AfterInput(ctx, "click", err)
		}
	}
	return nil
}

// hoverWait bounds the wait for the answer to a click's mouse move.
const hoverWait = 20 * time.Millisecond

// hover moves the mouse to x,y before a click, as a person's hand would.
//
// Chromium delivers a mouse move with the page's next animation frame and
// answers the CDP call only then. A hidden page (a background tab) draws
// no frames, so the answer would come only when Chromium stops waiting for
// one, 5 s later: the first act on every background tab stalled that long.
// The move is already on its way when the call is sent, and the press
// that follows makes the renderer deliver the queued move first, in order;
// so its answer is awaited at most hoverWait and the press follows either
// way. Only the move's own failure (not the short wait) is an error.
func (t *Tab) hover(ctx context.Context, x, y float64) error {
	c, cancel := context.WithTimeout(ctx, hoverWait)
	defer cancel()
	zero := 0
	err := proto.InputDispatchMouseEvent{Type: proto.InputDispatchMouseEventTypeMouseMoved, X: x, Y: y, Buttons: &zero}.Call(t.page.Context(c))
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

func (t *Tab) fill(ctx context.Context, a Action) error {
	var r struct {
		jsErr
		SelectAll bool `json:"selectAll"`
	}
	if err := t.runJSON(ctx, &r, "prepFill", a.Ref); err != nil {
		return cdpedge.Failed(ctx, "fill", err)
	}
	if err := r.toError(a.Ref); err != nil {
		return err
	}
	t.inputStarts()
	pg, cancel := t.call(ctx)
	defer cancel()
	if r.SelectAll {
		// Inputs without a selection API (email, number) select through the
		// editing command instead.
		for _, typ := range []proto.InputDispatchKeyEventType{proto.InputDispatchKeyEventTypeRawKeyDown, proto.InputDispatchKeyEventTypeKeyUp} {
			ev := proto.InputDispatchKeyEvent{Type: typ, Key: "a", Code: "KeyA", WindowsVirtualKeyCode: 65, Modifiers: 2}
			if typ == proto.InputDispatchKeyEventTypeRawKeyDown {
				ev.Commands = []string{"selectAll"}
			}
			if err := ev.Call(pg); err != nil {
				return cdpedge.AfterInput(ctx, "fill", err)
			}
		}
	}
	if a.Text == "" {
		for _, typ := range []proto.InputDispatchKeyEventType{proto.InputDispatchKeyEventTypeRawKeyDown, proto.InputDispatchKeyEventTypeKeyUp} {
			if err := (proto.InputDispatchKeyEvent{Type: typ, Key: "Delete", Code: "Delete", WindowsVirtualKeyCode: 46}).Call(pg); err != nil {
				return cdpedge.AfterInput(ctx, "fill", err)
			}
		}
		return nil
	}
	if err := (proto.InputInsertText{Text: a.Text}).Call(pg); err != nil {
		return cdpedge.AfterInput(ctx, "fill", err)
	}
	return nil
}

func (t *Tab) choose(ctx context.Context, a Action) error {
	var r jsErr
	t.inputStarts()
	if err := t.runJSON(ctx, &r, "select", a.Ref, a.Value, a.Label, false); err != nil {
		// The option may have been set before the call failed.
		return cdpedge.AfterInput(ctx, "select", err)
	}
	return r.toError(a.Ref)
}

func (t *Tab) key(ctx context.Context, a Action) error {
	sens, err := t.focusSensitive(ctx)
	if err != nil {
		return cdpedge.Failed(ctx, "key", err)
	}
	if sens {
		return jsErr{Err: "sign_in_required"}.toError("")
	}
	k, _ := lookupKey(a.Key)
	t.inputStarts()
	pg, cancel := t.call(ctx)
	defer cancel()
	down := proto.InputDispatchKeyEvent{Type: proto.InputDispatchKeyEventTypeRawKeyDown, Key: k.key, Code: k.code, WindowsVirtualKeyCode: k.vk}
	if k.text != "" {
		down.Type, down.Text, down.UnmodifiedText = proto.InputDispatchKeyEventTypeKeyDown, k.text, k.text
	}
	up := proto.InputDispatchKeyEvent{Type: proto.InputDispatchKeyEventTypeKeyUp, Key: k.key, Code: k.code, WindowsVirtualKeyCode: k.vk}
	for _, ev := range []proto.InputDispatchKeyEvent{down, up} {
		if err := ev.Call(pg); err != nil {
			return cdpedge.AfterInput(ctx, "key", err)
		}
	}
	return nil
}

func (t *Tab) wheel(ctx context.Context, p *Prepared) error {
	t.inputStarts()
	pg, cancel := t.call(ctx)
	defer cancel()
	ev := proto.InputDispatchMouseEvent{Type: proto.InputDispatchMouseEventTypeMouseWheel, X: p.Point[0], Y: p.Point[1], DeltaY: p.Action.DeltaY}
	if err := ev.Call(pg); err != nil {
		return cdpedge.AfterInput(ctx, "scroll", err)
	}
	return nil
}

// cursorShown is how long the agent cursor stays; design.md allows 900 ms.
const cursorShown = 600 * time.Millisecond

// drawCursor shows the agent cursor at (x,y) with a CDP Overlay highlight,
// which page scripts cannot observe; the returned func arms its removal
// cursorShown later. Every failure is ignored: the cursor is for the
// operator's eyes only and never changes an action's result.
func (t *Tab) drawCursor(ctx context.Context, x, y float64) (armHide func()) {
	pg, cancel := t.call(ctx)
	defer cancel()
	if !t.overlayOn(ctx) {
		return func() {}
	}
	alpha := 0.9
	const half = 7
	err := proto.OverlayHighlightRect{
		X: int(math.Round(x)) - half, Y: int(math.Round(y)) - half, Width: 2 * half, Height: 2 * half,
		Color:        &proto.DOMRGBA{R: 230, G: 0, B: 120, A: &alpha},
		OutlineColor: &proto.DOMRGBA{R: 255, G: 255, B: 255},
	}.Call(pg)
	if err != nil {
		return func() {}
	}
	t.mu.Lock()
	t.cursor++
	gen := t.cursor
	t.mu.Unlock()
	return func() {
		time.AfterFunc(t.cursorFor, func() {
			t.mu.Lock()
			mine := t.cursor == gen
			t.mu.Unlock()
			if !mine {
				return
			}
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = proto.OverlayHideHighlight{}.Call(t.page.Context(c))
		})
	}
}

// overlayOn enables the DOM and Overlay domains the cursor is drawn with,
// once per session, and reports whether they are on. Prepare turns them on
// for a click, while the review is still to come, so the dispatch after
// the approval pays only for the highlight itself (on a fresh tab the two
// enables took 50–190 ms, most of a first act).
func (t *Tab) overlayOn(ctx context.Context) bool {
	t.mu.Lock()
	on := t.overlay
	t.mu.Unlock()
	if on {
		return true
	}
	pg, cancel := t.call(ctx)
	defer cancel()
	if (proto.DOMEnable{}).Call(pg) != nil || (proto.OverlayEnable{}).Call(pg) != nil {
		return false
	}
	t.mu.Lock()
	t.overlay = true
	t.mu.Unlock()
	return true
}

// hideCursorNow removes a cursor still on screen so it is not baked into an
// observation's image.
func (t *Tab) hideCursorNow(ctx context.Context) {
	t.mu.Lock()
	on := t.overlay
	t.cursor++
	t.mu.Unlock()
	if !on {
		return
	}
	pg, cancel := t.call(ctx)
	defer cancel()
	_ = proto.OverlayHideHighlight{}.Call(pg)
}
