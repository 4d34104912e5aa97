package dom

import (
	"bytes"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestClickChecks(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/controls.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	for _, c := range []struct {
		role, name string
		code       errcode.Code
	}{
		{"button", "Disabled", errcode.ElementDisabled},
		{"button", "ARIA disabled", errcode.ElementDisabled},
		{"button", "In disabled fieldset", errcode.ElementDisabled},
	} {
		_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "click", Ref: find(t, o, c.role, c.name).Ref})
		wantCode(t, err, c.code)
	}
	// A modal over the target: found at dispatch, after the scroll, with
	// nothing dispatched and nothing reaching the page.
	_, err := act(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", "Covered by modal").Ref})
	ce := codeErr(t, err, errcode.ElementObscured)
	if ce.Dispatched || !strings.Contains(ce.Message, "overlay") {
		t.Fatalf("obscured error %+v", ce)
	}
	o = observe(t, tab, ObserveRequest{})
	_, err = act(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", "Stuck above").Ref})
	if ce := codeErr(t, err, errcode.ElementOutsideViewport); ce.Dispatched {
		t.Fatalf("%+v", ce)
	}
	st.none(t)
}

func TestClickCursorIsDrawnAndGone(t *testing.T) {
	st := startSite(t)
	page, tab := openTab(t, st.URL+"/dom/controls.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	big := find(t, o, "button", "Big grey")
	cx, cy := big.Bounds.X+big.Bounds.W/2, big.Bounds.Y+big.Bounds.H/2
	shot := func() image.Image {
		t.Helper()
		res, err := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng}.Call(page.Context(testCtx(t)))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(res.Data))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	grey := func(img image.Image) bool {
		r, g, b, _ := img.At(cx, cy).RGBA()
		return r>>8 == 200 && g>>8 == 200 && b>>8 == 200
	}
	if !grey(shot()) {
		t.Fatal("the button is not where the observation says")
	}
	// Drawn: the cursor is held on screen for this click, so a screenshot
	// that a busy machine makes slow still sees it where the click landed.
	tab.cursorFor = time.Minute
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: big.Ref})
	after := shot()
	if grey(after) {
		t.Fatal("no cursor at the click point right after the click")
	}
	r, g, b, _ := after.At(cx, cy).RGBA()
	if r>>8 < 180 || g>>8 > 60 || b>>8 < 80 {
		t.Fatalf("pixel at the click point is %d,%d,%d, not the cursor", r>>8, g>>8, b>>8)
	}
	if got := st.record(t).Get("clicked"); got != "big" {
		t.Fatalf("clicked %q", got)
	}

	// Gone: a second click with the real timing. The design.md bound is the
	// requirement itself: gone within 900 ms of the click.
	tab.cursorFor = cursorShown
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", "Big grey").Ref})
	clicked := time.Now()
	time.Sleep(900*time.Millisecond - time.Since(clicked))
	if !grey(shot()) {
		t.Fatal("cursor still on screen 900 ms after the click")
	}
}

func TestClickByPoint(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	add := find(t, o, "button", "Add to cart")
	x, y := float64(add.Bounds.X+add.Bounds.W/2), float64(add.Bounds.Y+add.Bounds.H/2)
	_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "click", X: f(x), Y: f(y)})
	wantCode(t, err, errcode.ImageRequired)

	o = observe(t, tab, ObserveRequest{IncludeImage: true})
	_, err = tab.Prepare(testCtx(t), o.ID, Action{Type: "click", X: f(float64(o.Viewport.Width)), Y: f(10)})
	wantCode(t, err, errcode.OutsideViewport)

	// The page looks different (typing changes pixels, not the DOM): the
	// recheck refuses to click blind.
	old := observe(t, tab, ObserveRequest{IncludeImage: true})
	o2 := observe(t, tab, ObserveRequest{})
	q := find(t, o2, "textbox", "Search")
	mustAct(t, tab, o2.ID, Action{Type: "fill", Ref: q.Ref, Text: "WWWWWWWW"})
	qx, qy := float64(q.Bounds.X+q.Bounds.W/2), float64(q.Bounds.Y+q.Bounds.H/2)
	_, err = act(t, tab, old.ID, Action{Type: "click", X: f(qx), Y: f(qy)})
	if ce := codeErr(t, err, errcode.PageChanged); ce.Dispatched {
		t.Fatalf("%+v", ce)
	}

	o = observe(t, tab, ObserveRequest{IncludeImage: true})
	p, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "click", X: f(x), Y: f(y)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Target == nil || p.Target.Name != "Add to cart" {
		t.Fatalf("review target under the point: %+v", p.Target)
	}
	if _, err := p.Dispatch(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := st.record(t).Get("clicked"); got != "add" {
		t.Fatalf("clicked %q", got)
	}
}

func TestFillSelectKeySubmitForm(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	q := find(t, o, "textbox", "Search")
	mustAct(t, tab, o.ID, Action{Type: "fill", Ref: q.Ref, Text: "old words"})
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "fill", Ref: q.Ref, Text: "red shoes"}) // replaces
	o = observe(t, tab, ObserveRequest{})
	if got := find(t, o, "textbox", "Search"); got.Value != "red shoes" {
		t.Fatalf("fill did not replace: %q", got.Value)
	}
	qty := find(t, o, "textbox", "Qty")
	mustAct(t, tab, o.ID, Action{Type: "fill", Ref: qty.Ref, Text: "3"}) // number: no selection API
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "fill", Ref: find(t, o, "textbox", "Note to seller").Ref, Text: "line one\nline two"})
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "fill", Ref: find(t, o, "textbox", "").Ref, Text: "New draft"}) // contenteditable
	o = observe(t, tab, ObserveRequest{})
	if ce := find(t, o, "textbox", ""); ce.Value != "New draft" {
		t.Fatalf("contenteditable value %q", ce.Value)
	}
	_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "fill", Ref: find(t, o, "button", "Mutate").Ref, Text: "x"})
	wantCode(t, err, errcode.NotEditable)
	_, err = tab.Prepare(testCtx(t), o.ID, Action{Type: "fill", Ref: q.Ref, Text: strings.Repeat("x", MaxFillChars+1)})
	wantCode(t, err, errcode.InvalidAction)

	size := find(t, o, "combobox", "Size")
	_, err = tab.Prepare(testCtx(t), o.ID, Action{Type: "select", Ref: size.Ref, Label: "XL"})
	wantCode(t, err, errcode.InvalidAction)
	mustAct(t, tab, o.ID, Action{Type: "select", Ref: size.Ref, Label: "l"})
	o = observe(t, tab, ObserveRequest{})
	if got := find(t, o, "combobox", "Size"); got.Value != "L" || !strings.Contains(o.Text, "Size is L") {
		t.Fatalf("select: %q, page text %q", got.Value, o.Text)
	}

	// Focus the search box, then Enter submits the form: the server sees it.
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: q.Ref})
	o = observe(t, tab, ObserveRequest{})
	_, err = tab.Prepare(testCtx(t), o.ID, Action{Type: "key", Key: "F5"})
	wantCode(t, err, errcode.InvalidKey)
	pk, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "key", Key: "enter"})
	if err != nil {
		t.Fatal(err)
	}
	if pk.Target == nil || pk.Target.Ref != q.Ref || pk.Target.Name != "Search" {
		t.Fatalf("a key's review target is the focused element, got %+v", pk.Target)
	}
	if _, err := pk.Dispatch(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	r := st.record(t) // /record answers 204: the form submit does not navigate
	for k, want := range map[string]string{"q": "red shoes", "qty": "3", "size": "L", "note": "line one\r\nline two", "fav": "on"} {
		if r.Get(k) != want {
			t.Errorf("submitted %s=%q, want %q (%v)", k, r.Get(k), want, r)
		}
	}
}

func TestKeyIntoPasswordIsSignIn(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/sensitive.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "textbox", "User").Ref})
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "key", Key: "Tab"}) // focus moves to the password
	o = observe(t, tab, ObserveRequest{})
	_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "key", Key: "Enter"})
	wantCode(t, err, errcode.SignInRequired)
	st.none(t)
}

func TestScroll(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	for _, d := range []float64{0, 1201, -1201} {
		_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "scroll", DeltaY: d})
		wantCode(t, err, errcode.InvalidScroll)
	}
	_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "scroll", X: f(10), Y: f(5000), DeltaY: 100})
	wantCode(t, err, errcode.OutsideViewport)
	mustAct(t, tab, o.ID, Action{Type: "scroll", X: f(100), Y: f(100), DeltaY: 600})
	waitInWorld(t, tab, `new Promise(r => { const c = () => scrollY >= 600 ? r(scrollY) : setTimeout(c, 10); c(); })`)
	o = observe(t, tab, ObserveRequest{})
	if o.ScrollY != 600 || !strings.Contains(o.TextForm, "scroll 0,600") {
		t.Fatalf("scrolled to %d", o.ScrollY)
	}
}

func TestUnknownAndMalformedActions(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	for _, a := range []Action{{Type: "hover", Ref: "e1"}, {Type: "click"}, {Type: "click", Ref: "e1", X: f(1), Y: f(1)}, {Type: "select", Ref: "e10"}, {Type: "click", X: f(1)}} {
		_, err := tab.Prepare(testCtx(t), o.ID, a)
		wantCode(t, err, errcode.InvalidAction)
	}
	_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "click", Ref: "e999"})
	wantCode(t, err, errcode.StaleElement)
}

// TestFailureAfterDispatchIsUncertain: the context ends while the input is
// on its way; the receipt must say it may have changed the page.
func TestFailureAfterDispatchIsUncertain(t *testing.T) {
	st := startSite(t)
	page, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	p, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "fill", Ref: find(t, o, "textbox", "Search").Ref, Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	// Closing the tab between the target check and the input makes the
	// input's CDP call fail.
	tab.beforeInput = func() { _ = page.Close() }
	_, err = p.Dispatch(testCtx(t))
	ce := codeErr(t, err, errcode.BrowserOperationFailed)
	if !ce.Dispatched || !ce.MayHaveChangedState || ce.Next != errcode.NextObserveBeforeRetry {
		t.Fatalf("uncertain failure %+v", ce)
	}
}
