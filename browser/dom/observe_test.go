package dom

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestObserveListsAccessibleRolesNamesAndFlags(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	lines := map[string]bool{}
	for _, l := range strings.Split(o.TextForm, "\n") {
		if i := strings.IndexByte(l, ' '); i > 0 && l[0] == 'e' {
			lines[l[i+1:]] = true
		}
	}
	for _, want := range []string{
		`button "Add to cart"`,
		`textbox "Qty" value="1"`,                 // label[for]
		`textbox "Search"`,                        // wrapping label
		`textbox "Only placeholder"`,              // placeholder
		`checkbox "Favourite" checked`,            // wrapping label, checked
		`combobox "Size" value="M" options=S|M|L`, // aria-label, select
		`textbox "Note to seller"`,                // aria-labelledby
		`button "Compare"`,                        // role=button
		`textbox "" value="Draft text"`,           // contenteditable
		`link "Logo"`,                             // img alt inside a link
		`button "Shadow button"`,                  // open shadow root
		`button "Bottom button" offscreen`,
	} {
		if !lines[want] {
			t.Errorf("missing line %q", want)
		}
	}
	for _, hidden := range []string{"Hidden action", "Invisible", "Secret"} {
		if strings.Contains(o.TextForm, `"`+hidden+`"`) {
			t.Errorf("%s is not visible (or is in a closed root) but was listed", hidden)
		}
	}
	if len(o.Regions) != 1 || o.Regions[0].Kind != "closed-shadow-root" || !strings.Contains(o.TextForm, "use an image") {
		t.Errorf("closed shadow root region: %+v", o.Regions)
	}
	for _, h := range []string{"observation " + o.ID, "tab t1", "url " + st.URL + "/dom/basic.html", `title "DOM basics"`, "viewport ", "scroll 0,0", "expires-in 15s", "elements all 17 (16 in viewport)"} {
		if !strings.Contains(o.TextForm, h) {
			t.Errorf("header lacks %q:\n%s", h, o.TextForm)
		}
	}
	// In-viewport elements come first; the offscreen one is last.
	if last := o.Elements[len(o.Elements)-1]; last.Name != "Bottom button" || !last.Offscreen {
		t.Errorf("last element %+v", last)
	}
	if !strings.Contains(o.Text, "Saved 0") || o.Counts.TextChars != utf8.RuneCountInString(o.Text) {
		t.Errorf("text %q counts %+v", o.Text, o.Counts)
	}
}

func TestRefsStableWithinDocumentAndResetByNavigation(t *testing.T) {
	st := startSite(t)
	page, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o1 := observe(t, tab, ObserveRequest{})
	extra := find(t, o1, "button", "Extra")
	mustAct(t, tab, o1.ID, Action{Type: "click", Ref: find(t, o1, "button", "Remove the extra").Ref})
	o2 := observe(t, tab, ObserveRequest{})
	if o2.ID == o1.ID {
		t.Fatal("a new observation reused the id")
	}
	refs := func(o *Observation) map[string]string {
		m := map[string]string{}
		for _, e := range o.Elements {
			m[e.Role+" "+e.Name] = e.Ref
		}
		return m
	}
	r1, r2 := refs(o1), refs(o2)
	delete(r1, "button Extra")
	for k, v := range r1 {
		if r2[k] != v {
			t.Errorf("%s: ref %s became %s", k, v, r2[k])
		}
	}
	if _, ok := r2["button Extra"]; ok {
		t.Fatal("removed element still listed")
	}
	// The removed element's ref is dead, not reassigned.
	_, err := tab.Prepare(testCtx(t), o2.ID, Action{Type: "click", Ref: extra.Ref})
	wantCode(t, err, errcode.StaleElement)

	navigate(t, page, st.URL+"/dom/next.html")
	o3 := observe(t, tab, ObserveRequest{})
	back := find(t, o3, "link", "Back")
	if back.Ref != "e1" {
		t.Errorf("a new document starts its refs afresh, got %s", back.Ref)
	}
	_, err = tab.Prepare(testCtx(t), o3.ID, Action{Type: "click", Ref: find(t, o1, "button", "Mutate").Ref})
	wantCode(t, err, errcode.StaleElement)
}

func TestFramesAndRegions(t *testing.T) {
	st := startSite(t)
	page, tab := openTab(t, st.URL+"/dom/frames.html", Options{})
	_ = page
	o := observe(t, tab, ObserveRequest{})
	inner := find(t, o, "button", "Frame button")
	find(t, o, "button", "Top button")
	var cross *Region
	for i := range o.Regions {
		if o.Regions[i].Kind == "frame" {
			cross = &o.Regions[i]
		}
	}
	if cross == nil || !strings.Contains(cross.Label, "localhost") {
		t.Fatalf("cross-origin frame not listed as a region: %+v\n%s", o.Regions, o.TextForm)
	}
	if strings.Count(o.TextForm, `"Frame button"`) != 1 {
		t.Errorf("the cross-origin frame's button leaked into the listing:\n%s", o.TextForm)
	}
	if !strings.Contains(o.Text, "Inside the frame") {
		t.Errorf("same-origin frame text missing: %q", o.Text)
	}
	// Clicking inside the same-origin frame lands on the frame's button:
	// the point is translated through the frame's border and padding.
	// A frame's load counts as a change of the page (world.js), and the
	// cross-origin frame's load event can reach the top document after
	// the page's own load on a busy machine; the observation is then
	// rightly stale, so observe once more (the page is settled by then).
	r, err := act(t, tab, o.ID, Action{Type: "click", Ref: inner.Ref})
	if ce := (*errcode.Error)(nil); errors.As(err, &ce) && ce.Code == errcode.StaleObservation {
		t.Logf("first observation went stale (%v): observing again", err)
		o = observe(t, tab, ObserveRequest{})
		r, err = act(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", "Frame button").Ref})
	}
	if err != nil || !r.Dispatched || r.Outcome != "not_yet_verified" {
		t.Fatalf("click in the frame: %+v %v", r, err)
	}
	if got := st.record(t).Get("clicked"); got != "frame" {
		t.Fatalf("clicked %q", got)
	}
}

func TestElementPagingAndCursor(t *testing.T) {
	bs := benchServer(t)
	_, tab := openTab(t, bs.URL+"/app?n=500", Options{})
	o := observe(t, tab, ObserveRequest{})
	total := o.Counts.Elements
	if total <= 2*MaxElements || len(o.Elements) != MaxElements || o.NextCursor == "" {
		t.Fatalf("first page: %d of %d, cursor %q", len(o.Elements), total, o.NextCursor)
	}
	if !strings.Contains(o.TextForm, "left out: elements 201-") {
		t.Fatalf("header does not say what was left out:\n%s", o.TextForm[:400])
	}
	// In-viewport first.
	seenOff := false
	for _, e := range o.Elements {
		if e.Offscreen {
			seenOff = true
		} else if seenOff {
			t.Fatalf("in-viewport %s after an offscreen element", e.Ref)
		}
	}
	seen := map[string]bool{}
	pages := 0
	for cur := o; ; {
		pages++
		for _, e := range cur.Elements {
			if seen[e.Ref] {
				t.Fatalf("%s listed twice", e.Ref)
			}
			seen[e.Ref] = true
		}
		if cur.ID != o.ID {
			t.Fatalf("a cursor page of an unchanged page has a new id %s", cur.ID)
		}
		if cur.NextCursor == "" || cur.Counts.ElementsTo == total {
			break
		}
		cur = observe(t, tab, ObserveRequest{Cursor: cur.NextCursor})
	}
	if len(seen) != total || pages != (total+MaxElements-1)/MaxElements {
		t.Fatalf("paged %d of %d elements in %d pages", len(seen), total, pages)
	}
	_, err := tab.Observe(testCtx(t), ObserveRequest{Cursor: "nonsense"})
	wantCode(t, err, errcode.InvalidAction)
}

func TestTextPaging(t *testing.T) {
	bs := benchServer(t)
	_, tab := openTab(t, bs.URL+"/app?n=500", Options{})
	// The document's first observation carries a digest of its text,
	// cut at a line end, and says where the rest starts.
	o := observe(t, tab, ObserveRequest{})
	got := utf8.RuneCountInString(o.Text)
	if got > FirstLookTextChars || got < FirstLookTextChars/2 || o.Counts.TextChars <= 3*MaxTextChars/2 {
		t.Fatalf("first look: text page %d chars of %d", got, o.Counts.TextChars)
	}
	if o.Counts.TextTo != got || !strings.Contains(o.TextForm, fmt.Sprintf("left out: elements 201-%d, text chars %d-", o.Counts.Elements, got+1)) {
		t.Fatalf("header does not say the text was cut:\n%s", o.TextForm[:400])
	}
	// Later observations of the same document carry the default page.
	again := observe(t, tab, ObserveRequest{})
	if n := utf8.RuneCountInString(again.Text); n != DefaultTextChars || !strings.Contains(again.TextForm, "text chars 4001-") {
		t.Fatalf("second observation: text page %d chars:\n%s", n, again.TextForm[:400])
	}
	full := o.Text
	cur := o.NextCursor
	for cur != "" {
		p := observe(t, tab, ObserveRequest{Cursor: cur, TextChars: 100000})
		if utf8.RuneCountInString(p.Text) > MaxTextChars {
			t.Fatalf("text page of %d chars", utf8.RuneCountInString(p.Text))
		}
		full += p.Text
		cur = p.NextCursor
	}
	if utf8.RuneCountInString(full) != o.Counts.TextChars {
		t.Fatalf("paged %d of %d chars", utf8.RuneCountInString(full), o.Counts.TextChars)
	}
	if strings.Contains(o.Text, "Prices") || !strings.Contains(full, "Prices") {
		t.Fatal("paged text does not reach the end of the page")
	}
	if full[len(o.Text)] != '\n' {
		t.Fatalf("the digest does not end at a line end: %q", o.Text[len(o.Text)-40:])
	}
	_, err := tab.Observe(testCtx(t), ObserveRequest{TextChars: -1})
	wantCode(t, err, errcode.InvalidAction)
}

// textChars given on a document's first observation is honoured as is, and
// a navigation makes the next observation a first look again.
func TestFirstLookTextCharsAndNavigation(t *testing.T) {
	bs := benchServer(t)
	page, tab := openTab(t, bs.URL+"/app?n=500", Options{})
	o := observe(t, tab, ObserveRequest{TextChars: 5000})
	if n := utf8.RuneCountInString(o.Text); n != 5000 {
		t.Fatalf("textChars 5000 on a first observation gave %d", n)
	}
	navigate(t, page, bs.URL+"/app?n=50")
	o = observe(t, tab, ObserveRequest{})
	if n := utf8.RuneCountInString(o.Text); n > FirstLookTextChars || o.NextCursor == "" {
		t.Fatalf("first observation after a navigation: %d text chars, cursor %q", n, o.NextCursor)
	}
}

func TestSinceDiffAfterOneClick(t *testing.T) {
	bs := benchServer(t)
	_, tab := openTab(t, bs.URL+"/app?n=500", Options{})
	o1 := observe(t, tab, ObserveRequest{})
	add := find(t, o1, "button", "Add to cart")
	mustAct(t, tab, o1.ID, Action{Type: "click", Ref: add.Ref})
	d := observe(t, tab, ObserveRequest{Since: o1.ID})
	if d.Diff == nil || len(d.Diff.Changed) != 1 || len(d.Diff.Added) != 0 || len(d.Diff.Removed) != 0 {
		t.Fatalf("diff %+v\n%s", d.Diff, d.TextForm)
	}
	if c := d.Diff.Changed[0]; c.Ref != add.Ref || c.Name != "Added" {
		t.Fatalf("changed %+v", c)
	}
	if len(d.TextForm) > 600 {
		t.Fatalf("since diff is %d chars:\n%s", len(d.TextForm), d.TextForm)
	}
	if !strings.Contains(d.TextForm, `~ `+add.Ref+` button "Added"`) {
		t.Fatalf("diff text form:\n%s", d.TextForm)
	}
	// An unknown base is a full listing with a note, not an error.
	full := observe(t, tab, ObserveRequest{Since: "o999-deadbeef"})
	if full.Diff != nil || len(full.Elements) == 0 || !strings.Contains(full.TextForm, "note: since") {
		t.Fatalf("unknown since base:\n%.400s", full.TextForm)
	}
}

func TestImageIsViewportAtCSSPixels(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{IncludeImage: true})
	img, err := png.Decode(bytes.NewReader(o.Image))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != o.Viewport.Width || b.Dy() != o.Viewport.Height {
		t.Fatalf("image %v, viewport %+v", b, o.Viewport)
	}
}

func TestSensitiveFieldsRefuseImageAndActions(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/sensitive.html", Options{})
	_, err := tab.Observe(testCtx(t), ObserveRequest{IncludeImage: true})
	wantCode(t, err, errcode.SignInRequired)
	o := observe(t, tab, ObserveRequest{})
	if strings.Contains(o.TextForm, "hunter2") {
		t.Fatal("a password value reached the observation")
	}
	pw, otc, file := find(t, o, "textbox", "Password"), find(t, o, "textbox", "Code"), find(t, o, "button", "File")
	for _, e := range []Element{pw, otc, file} {
		if !e.Sensitive || !strings.Contains(line(e), "sensitive") {
			t.Errorf("%s not flagged sensitive", line(e))
		}
	}
	for _, a := range []Action{
		{Type: "click", Ref: pw.Ref},
		{Type: "fill", Ref: pw.Ref, Text: "x"},
		{Type: "fill", Ref: otc.Ref, Text: "123456"},
		{Type: "click", Ref: file.Ref},
	} {
		_, err := tab.Prepare(testCtx(t), o.ID, a)
		wantCode(t, err, errcode.SignInRequired)
	}
	// A file input alone does not block the image: only sign-in fields do.
	_, tab2 := openTab(t, st.URL+"/dom/files.html", Options{})
	o2 := observe(t, tab2, ObserveRequest{IncludeImage: true})
	if o2.Image == nil {
		t.Fatal("no image on a page with only a file input")
	}
	_, err = tab2.Prepare(testCtx(t), o2.ID, Action{Type: "click", Ref: find(t, o2, "button", "Attachment").Ref})
	wantCode(t, err, errcode.SignInRequired)
}

// TestPageScriptsCannotSeeUs: a hostile page snapshots its DOM and globals,
// we observe, fill, select and click, and the page reports what changed.
func TestPageScriptsCannotSeeUs(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/spy.html", Options{})
	o := observe(t, tab, ObserveRequest{IncludeImage: true})
	mustAct(t, tab, o.ID, Action{Type: "fill", Ref: find(t, o, "textbox", "Name").Ref, Text: "Ada"})
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "select", Ref: find(t, o, "combobox", "").Ref, Label: "two"})
	observe(t, tab, ObserveRequest{Since: o.ID})
	o = observe(t, tab, ObserveRequest{})
	if _, err := tab.Verify(testCtx(t), ElementVisible, `button "Shadowed"`); err != nil {
		t.Fatal(err)
	}
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", "Report").Ref})
	r := st.record(t)
	t.Logf("page saw: %s", r.Get("seen"))
	for k, want := range map[string]string{"attrs": "0", "props": "0", "globals": "", "attrMut": "0", "nodeMut": "0", "tw": "undefined"} {
		if got := r.Get(k); got != want {
			t.Errorf("page saw %s=%q, want %q", k, got, want)
		}
	}
	// The witness works: a ref written into the DOM is seen.
	waitInWorld(t, tab, `document.getElementById("name").setAttribute("data-ref", "e1"), Promise.resolve(1)`)
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", "Report").Ref})
	if r := st.record(t); r.Get("attrs") != "1" || r.Get("attrMut") != "1" {
		t.Fatalf("the spy missed a written attribute: %v", r)
	}
}
