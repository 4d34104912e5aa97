package dom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
)

// Bounds of one observation page (DESIGN §6).
const (
	MaxElements      = 200
	DefaultTextChars = 4000
	MaxTextChars     = 16000
	// maxStoredText bounds the page text kept for paging; beyond it the
	// header says the text was cut.
	maxStoredText = 1 << 20
)

// ObserveRequest is browser_observe's arguments.
type ObserveRequest struct {
	IncludeImage bool
	// Cursor continues a previous observation's element and text pages.
	Cursor string
	// Since asks for a diff against that observation.
	Since string
	// TextChars is the size of the text page; 0 means DefaultTextChars,
	// more than MaxTextChars is cut to MaxTextChars.
	TextChars int
}

// Rect is a box in top-level viewport CSS pixels.
type Rect struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// Element is one interactive element as the model sees it.
type Element struct {
	Ref         string   `json:"ref"`
	Role        string   `json:"role"`
	Name        string   `json:"name"`
	Value       string   `json:"value,omitempty"`
	HasValue    bool     `json:"-"`
	Options     []string `json:"options,omitempty"`
	MoreOptions int      `json:"moreOptions,omitempty"`
	Checked     string   `json:"checked,omitempty"` // "checked" or "mixed"
	Selected    bool     `json:"selected,omitempty"`
	Expanded    bool     `json:"expanded,omitempty"`
	Disabled    bool     `json:"disabled,omitempty"`
	Offscreen   bool     `json:"offscreen,omitempty"`
	Sensitive   bool     `json:"sensitive,omitempty"`
	Bounds      Rect     `json:"bounds"`
}

// Region is a part of the page the text form cannot describe: a closed
// shadow root or a cross-origin frame. The agent needs an image for it.
type Region struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"` // "frame" or "closed-shadow-root"
	Label  string `json:"label"`
	Bounds Rect   `json:"bounds"`
	Hint   string `json:"hint"`
}

// Counts are the header's numbers. Ranges are 1-based and inclusive; a
// zero From means nothing of that kind is on this page.
type Counts struct {
	Elements     int `json:"elements"`
	InViewport   int `json:"inViewport"`
	ElementsFrom int `json:"elementsFrom"`
	ElementsTo   int `json:"elementsTo"`
	Regions      int `json:"regions"`
	TextChars    int `json:"textChars"`
	TextFrom     int `json:"textFrom"`
	TextTo       int `json:"textTo"`
	// TextLinesDropped counts page text lines left out because they only
	// repeat element names or select options listed above.
	TextLinesDropped int `json:"textLinesDropped"`
}

// Diff is the answer to ObserveRequest.Since.
type Diff struct {
	Since       string    `json:"since"`
	Added       []Element `json:"added,omitempty"`
	Changed     []Element `json:"changed,omitempty"`
	Removed     []string  `json:"removed,omitempty"`
	TextAdded   []string  `json:"textAdded,omitempty"`
	TextRemoved []string  `json:"textRemoved,omitempty"`
	Truncated   bool      `json:"truncated,omitempty"`
}

// Viewport is the layout viewport in CSS pixels.
type Viewport struct {
	Width  int     `json:"width"`
	Height int     `json:"height"`
	DPR    float64 `json:"devicePixelRatio"`
}

// Observation is the result of Observe: the structured data and the text
// form the model reads. All strings but the ids came from the site and are
// untrusted.
type Observation struct {
	ID         string    `json:"observationId"`
	TabID      string    `json:"tabId"`
	URL        string    `json:"url"` // origin + path
	Title      string    `json:"title"`
	Viewport   Viewport  `json:"viewport"`
	ScrollX    int       `json:"scrollX"`
	ScrollY    int       `json:"scrollY"`
	ExpiresIn  int       `json:"expiresInMs"`
	Counts     Counts    `json:"counts"`
	Elements   []Element `json:"elements,omitempty"`
	Regions    []Region  `json:"regions,omitempty"`
	Text       string    `json:"text,omitempty"`
	NextCursor string    `json:"cursor,omitempty"`
	Diff       *Diff     `json:"diff,omitempty"`
	// LeftOut says, one line each, what this page did not show.
	LeftOut []string `json:"leftOut,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Image is the viewport PNG at CSS pixel size when asked for.
	Image []byte `json:"-"`
	// TextForm is what the model reads.
	TextForm string `json:"-"`
}

// observation is what the Tab keeps of one Observe.
type observation struct {
	id       string
	state    pageState
	created  time.Time
	paused   time.Duration
	frozenAt time.Time
	freezes  int
	consumed bool
	invalid  bool

	elements []Element // in-viewport first, then document order
	byRef    map[string]int
	sig      map[string]string
	regions  []Region
	text     string
	textLen  int
	// droppedLines counts text lines left out because they only repeat
	// element names (the element list already says them).
	droppedLines int
	image        []byte
	clip         *proto.PageViewport
}

func (o *observation) age(now time.Time) time.Duration {
	end := now
	if o.freezes > 0 {
		end = o.frozenAt
	}
	return end.Sub(o.created) - o.paused
}

func (o *observation) freeze(now time.Time) {
	if o.freezes == 0 {
		o.frozenAt = now
	}
	o.freezes++
}

func (o *observation) thaw(now time.Time) {
	if o.freezes == 0 {
		return
	}
	o.freezes--
	if o.freezes == 0 {
		o.paused += now.Sub(o.frozenAt)
	}
}

// rawElement is one row of the isolated world's compact element list:
// [ref, role, name, value, flags, x, y, w, h, options?, moreOptions?].
type rawElement struct {
	Ref, Role, Name, Value string
	Flags                  int
	X, Y, W, H             int
	Options                []string
	MoreOptions            int
}

const (
	fValue = 1 << iota
	fChecked
	fMixed
	fSelected
	fExpanded
	fDisabled
	fSensitive
	fInView
)

func (r *rawElement) UnmarshalJSON(b []byte) error {
	var row []json.RawMessage
	if err := json.Unmarshal(b, &row); err != nil {
		return err
	}
	if len(row) < 9 {
		return fmt.Errorf("element row of %d fields", len(row))
	}
	fields := []any{&r.Ref, &r.Role, &r.Name, &r.Value, &r.Flags, &r.X, &r.Y, &r.W, &r.H}
	if len(row) >= 11 {
		fields = append(fields, &r.Options, &r.MoreOptions)
	}
	for i, f := range fields {
		if err := json.Unmarshal(row[i], f); err != nil {
			return err
		}
	}
	r.Name, r.Value = siteText(r.Name), siteText(r.Value)
	for i, o := range r.Options {
		r.Options[i] = siteText(o)
	}
	return nil
}

type rawBox struct {
	Kind  string `json:"kind"`
	Label string `json:"label"`
	Tag   string `json:"tag"`
	X     int    `json:"x"`
	Y     int    `json:"y"`
	W     int    `json:"w"`
	H     int    `json:"h"`
}

// rawSnapshot is the isolated world's observe result. Elements and Text are
// absent when unchanged since the generation the host said it holds.
type rawSnapshot struct {
	State            pageState     `json:"state"`
	ElemGen          int           `json:"elemGen"`
	TextGen          int           `json:"textGen"`
	Elements         *[]rawElement `json:"elements"`
	Regions          []rawBox      `json:"regions"`
	Cands            []rawBox      `json:"cands"`
	Text             *string       `json:"text"`
	TextLen          int           `json:"textLen"`
	SensitiveVisible bool          `json:"sensitiveVisible"`
}

// snapCache is the last element list and text the isolated world sent for
// one document, so an unchanged page is not transferred again.
type snapCache struct {
	token            string
	elemGen, textGen int
	elems            []rawElement
	text             string
}

const imageHint = "use an image: observe with includeImage, then click {x,y}"

// Observe reads the page (DESIGN §6). Errors carry DESIGN codes:
// sign_in_required when an image is asked for while a password or
// one-time-code field is rendered anywhere in the document (not only in the
// viewport), invalid_action for bad arguments. A cursor continues the
// cursor's observation under the same id while it is fresh; once stale, the
// same offsets are served from a new observation (a note says so). A since
// whose base is unknown or of another document gives a full listing with a
// note instead of an error.
func (t *Tab) Observe(ctx context.Context, req ObserveRequest) (*Observation, error) {
	textChars := req.TextChars
	switch {
	case textChars < 0:
		return nil, consent.Errorf(consent.CodeInvalidAction, consent.NextNone, "textChars must be between 0 and %d", MaxTextChars)
	case textChars == 0:
		textChars = DefaultTextChars
	case textChars > MaxTextChars:
		textChars = MaxTextChars
	}
	if req.Cursor != "" && req.Since != "" {
		return nil, consent.Errorf(consent.CodeInvalidAction, consent.NextNone, "cursor and since cannot be combined")
	}
	var notes []string
	elemOff, textOff := 0, 0
	if req.Cursor != "" {
		id, eo, to, ok := parseCursor(req.Cursor)
		if !ok {
			return nil, consent.Errorf(consent.CodeInvalidAction, consent.NextNone, "malformed cursor %q", req.Cursor)
		}
		elemOff, textOff = eo, to
		t.mu.Lock()
		base := t.obs[id]
		t.mu.Unlock()
		if base != nil {
			if err := t.checkFresh(ctx, base); err == nil {
				if req.IncludeImage && base.image == nil {
					notes = append(notes, "no image on a cursor page; observe without cursor for one")
				}
				return t.render(base, nil, elemOff, textOff, textChars, notes, base.image), nil
			} else if consent.CodeOf(err) != consent.CodeStaleObservation {
				return nil, err
			}
		}
		notes = append(notes, "the page changed since that cursor was issued; this is a new observation at the same offsets")
	}
	o, sensitive, err := t.snapshot(ctx)
	if err != nil {
		return nil, opErr(ctx, "observe", err)
	}
	var img []byte
	if req.IncludeImage {
		if sensitive {
			return nil, consent.Errorf(consent.CodeSignInRequired, consent.NextNone,
				"a password or one-time-code field is visible; no image is taken. Ask the operator to take over (browser_handoff) for sign-in")
		}
		img, o.clip, err = t.capture(ctx, o.state.DPR)
		if err != nil {
			return nil, opErr(ctx, "observe image", err)
		}
		o.image = img
	}
	t.store(o)
	var diff *observation
	if req.Since != "" {
		t.mu.Lock()
		base := t.obs[req.Since]
		t.mu.Unlock()
		switch {
		case base == nil:
			notes = append(notes, "since: that observation is unknown or too old; full listing")
		case base.state.Token != o.state.Token:
			notes = append(notes, "since: that observation was of another document; full listing")
		default:
			diff = base
		}
	}
	return t.render(o, diff, elemOff, textOff, textChars, notes, img), nil
}

// snapshot walks the page and records a new observation (not yet stored).
func (t *Tab) snapshot(ctx context.Context) (*observation, bool, error) {
	t.mu.Lock()
	c := t.snap
	t.mu.Unlock()
	var raw rawSnapshot
	if err := t.runJSON(ctx, &raw, "observe", map[string]any{"maxText": maxStoredText, "token": c.token, "elemGen": c.elemGen, "textGen": c.textGen}); err != nil {
		return nil, false, err
	}
	mine := raw.State.Token == c.token
	if raw.Elements != nil {
		c.elems = *raw.Elements
	} else if !mine || raw.ElemGen != c.elemGen {
		return nil, false, errors.New("isolated world sent no elements for an unknown generation")
	}
	if raw.Text != nil {
		c.text = siteBlock(*raw.Text)
	} else if !mine || raw.TextGen != c.textGen {
		return nil, false, errors.New("isolated world sent no text for an unknown generation")
	}
	c.token, c.elemGen, c.textGen = raw.State.Token, raw.ElemGen, raw.TextGen
	t.mu.Lock()
	t.snap = c
	t.mu.Unlock()
	text, dropped := dropNameLines(c.text, c.elems)
	t.mu.Lock()
	t.seq++
	seq := t.seq
	t.mu.Unlock()
	o := &observation{
		id:      newID(seq),
		state:   raw.State,
		created: t.now(),
		byRef:   map[string]int{},
		sig:     map[string]string{},
		text:    text,
		textLen: utf8.RuneCountInString(text),
	}
	if raw.TextLen > len(c.text) {
		// Cut in the page at maxStoredText UTF-16 units; report the rest.
		o.textLen += raw.TextLen - len(utf16.Encode([]rune(c.text)))
	}
	o.droppedLines = dropped
	in, out := []Element{}, []Element{}
	for _, r := range c.elems {
		e := Element{
			Ref: r.Ref, Role: r.Role, Name: r.Name, Value: r.Value, HasValue: r.Flags&fValue != 0,
			Options: r.Options, MoreOptions: r.MoreOptions,
			Selected: r.Flags&fSelected != 0, Expanded: r.Flags&fExpanded != 0, Disabled: r.Flags&fDisabled != 0,
			Sensitive: r.Flags&fSensitive != 0, Offscreen: r.Flags&fInView == 0,
			Bounds: Rect{r.X, r.Y, r.W, r.H},
		}
		switch {
		case r.Flags&fChecked != 0:
			e.Checked = "checked"
		case r.Flags&fMixed != 0:
			e.Checked = "mixed"
		}
		if _, dup := o.byRef[e.Ref]; dup {
			continue
		}
		o.byRef[e.Ref] = 0
		if !e.Offscreen {
			in = append(in, e)
		} else {
			out = append(out, e)
		}
	}
	o.elements = append(in, out...)
	for i, e := range o.elements {
		o.byRef[e.Ref] = i
		o.sig[e.Ref] = signature(e)
	}
	for _, r := range raw.Regions {
		label := "cross-origin frame"
		if r.Label != "" && r.Label != "null" {
			label += " " + r.Label
		}
		o.regions = append(o.regions, Region{Kind: "frame", Label: label, Bounds: Rect{r.X, r.Y, r.W, r.H}, Hint: imageHint})
	}
	if len(raw.Cands) > 0 {
		closed, err := t.closedHosts(ctx, len(raw.Cands))
		if err != nil {
			return nil, false, err
		}
		for i, c := range raw.Cands {
			if i < len(closed) && closed[i] {
				o.regions = append(o.regions, Region{Kind: "closed-shadow-root", Label: "closed shadow root <" + c.Tag + ">", Bounds: Rect{c.X, c.Y, c.W, c.H}, Hint: imageHint})
			}
		}
	}
	for i := range o.regions {
		o.regions[i].ID = "r" + strconv.Itoa(i+1)
	}
	return o, raw.SensitiveVisible, nil
}

// closedHosts asks CDP which of the isolated world's candidate hosts (custom
// elements without an open shadow root) host a closed one; only CDP can see
// closed roots.
func (t *Tab) closedHosts(ctx context.Context, n int) ([]bool, error) {
	id, err := t.worldID(ctx)
	if err != nil {
		return nil, err
	}
	p, cancel := t.call(ctx)
	defer cancel()
	const group = "tabwarden-hosts"
	defer func() { _ = proto.RuntimeReleaseObjectGroup{ObjectGroup: group}.Call(p) }()
	arr, err := proto.RuntimeEvaluate{Expression: "__tw.cand", ContextID: id, ObjectGroup: group, Silent: true}.Call(p)
	if err != nil {
		return nil, err
	}
	if arr.Result.ObjectID == "" {
		return nil, nil
	}
	props, err := proto.RuntimeGetProperties{ObjectID: arr.Result.ObjectID, OwnProperties: true}.Call(p)
	if err != nil {
		return nil, err
	}
	out := make([]bool, n)
	for _, pd := range props.Result {
		i, err := strconv.Atoi(pd.Name)
		if err != nil || i < 0 || i >= n || pd.Value == nil || pd.Value.ObjectID == "" {
			continue
		}
		d, err := proto.DOMDescribeNode{ObjectID: pd.Value.ObjectID, Pierce: false}.Call(p)
		if err != nil {
			return nil, err
		}
		for _, sr := range d.Node.ShadowRoots {
			if sr.ShadowRootType == proto.DOMShadowRootTypeClosed {
				out[i] = true
			}
		}
	}
	return out, nil
}

func (t *Tab) store(o *observation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.obs[o.id] = o
	t.order = append(t.order, o.id)
	for len(t.order) > keepObservations {
		delete(t.obs, t.order[0])
		t.order = t.order[1:]
	}
}

// checkFresh returns stale_observation when o is past any expiry rule.
func (t *Tab) checkFresh(ctx context.Context, o *observation) error {
	t.mu.Lock()
	age := o.age(t.now())
	consumed, invalid := o.consumed, o.invalid
	t.mu.Unlock()
	stale := func(why string) error {
		return consent.Errorf(consent.CodeStaleObservation, consent.NextObserve, "observation %s is stale: %s", o.id, why)
	}
	switch {
	case invalid:
		return stale("the tab was taken over or reset")
	case consumed:
		return stale("an action already used it")
	case age >= t.lifetime:
		return stale(fmt.Sprintf("older than %s", t.lifetime))
	}
	s, err := t.state(ctx)
	if err != nil {
		return opErr(ctx, "check observation", err)
	}
	if why := o.state.changed(s); why != "" {
		return stale(why)
	}
	return nil
}

// signature is what a since diff compares: the element's line without the
// offscreen flag, so a scroll alone does not rewrite the whole list.
func signature(e Element) string {
	e.Offscreen = false
	return line(e)
}

// line renders one element, e.g. `e15 combobox "Size" value="M" options=S|M|L`.
func line(e Element) string {
	var b strings.Builder
	b.WriteString(e.Ref)
	b.WriteByte(' ')
	b.WriteString(e.Role)
	b.WriteByte(' ')
	b.WriteString(quote(e.Name))
	if e.HasValue && !e.Sensitive {
		b.WriteString(" value=")
		b.WriteString(quote(e.Value))
	}
	if len(e.Options) > 0 {
		b.WriteString(" options=")
		for i, o := range e.Options {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(strings.NewReplacer("|", "¦", "\n", " ", " ", "\u00a0").Replace(o))
		}
		if e.MoreOptions > 0 {
			fmt.Fprintf(&b, "|…+%d", e.MoreOptions)
		}
	}
	if e.Checked != "" {
		b.WriteByte(' ')
		b.WriteString(e.Checked)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{e.Selected, "selected"}, {e.Expanded, "expanded"}, {e.Disabled, "disabled"}, {e.Offscreen, "offscreen"}, {e.Sensitive, "sensitive"}} {
		if f.on {
			b.WriteByte(' ')
			b.WriteString(f.name)
		}
	}
	return b.String()
}

var quoter = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ", "\r", " ", "\t", " ")

func quote(s string) string { return `"` + quoter.Replace(s) + `"` }

// shortURL is origin + path: queries and fragments often carry tokens.
func shortURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw
	}
	if u.Scheme == "about" || u.Scheme == "data" {
		return u.Scheme + ":" + strings.SplitN(u.Opaque, ",", 2)[0]
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

func parseCursor(c string) (id string, elemOff, textOff int, ok bool) {
	parts := strings.Split(c, ":")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	e, err1 := strconv.Atoi(parts[1])
	x, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || e < 0 || x < 0 || parts[0] == "" {
		return "", 0, 0, false
	}
	return parts[0], e, x, true
}

// render builds the page of o starting at the given offsets, or the diff
// against base when base is not nil.
func (t *Tab) render(o *observation, base *observation, elemOff, textOff, textChars int, notes []string, img []byte) *Observation {
	t.mu.Lock()
	left := t.lifetime - o.age(t.now())
	t.mu.Unlock()
	if left < 0 {
		left = 0
	}
	ob := &Observation{
		ID: o.id, TabID: t.id, URL: shortURL(o.state.Href), Title: siteText(o.state.Title),
		Viewport: Viewport{Width: int(o.state.VW), Height: int(o.state.VH), DPR: o.state.DPR},
		ScrollX:  int(o.state.SX), ScrollY: int(o.state.SY),
		ExpiresIn: int(left / time.Millisecond),
		Regions:   o.regions,
		Notes:     notes,
		Image:     img,
	}
	c := &ob.Counts
	c.Elements = len(o.elements)
	c.Regions = len(o.regions)
	c.TextChars = o.textLen
	c.TextLinesDropped = o.droppedLines
	for _, e := range o.elements {
		if !e.Offscreen {
			c.InViewport++
		}
	}
	if base != nil {
		ob.Diff = diffObs(base, o)
	} else {
		if elemOff < len(o.elements) {
			end := min(elemOff+MaxElements, len(o.elements))
			ob.Elements = o.elements[elemOff:end]
			c.ElementsFrom, c.ElementsTo = elemOff+1, end
		}
		runes := []rune(o.text)
		if textOff < len(runes) {
			end := min(textOff+textChars, len(runes))
			ob.Text = string(runes[textOff:end])
			c.TextFrom, c.TextTo = textOff+1, end
		}
		nextE, nextT := len(o.elements), len(runes)
		if c.ElementsTo > 0 && c.ElementsTo < len(o.elements) {
			ob.LeftOut = append(ob.LeftOut, fmt.Sprintf("elements %d-%d", c.ElementsTo+1, len(o.elements)))
			nextE = c.ElementsTo
		} else if elemOff < len(o.elements) {
			nextE = len(o.elements)
		}
		if c.TextTo > 0 && c.TextTo < len(runes) {
			ob.LeftOut = append(ob.LeftOut, fmt.Sprintf("text chars %d-%d", c.TextTo+1, len(runes)))
			nextT = c.TextTo
		}
		if o.textLen > len(runes) {
			ob.LeftOut = append(ob.LeftOut, fmt.Sprintf("text chars %d-%d (not kept)", len(runes)+1, o.textLen))
		}
		if nextE < len(o.elements) || nextT < len(runes) {
			ob.NextCursor = fmt.Sprintf("%s:%d:%d", o.id, nextE, nextT)
		}
	}
	ob.TextForm = textForm(ob)
	return ob
}

// maxDiffLines bounds a since diff; past it the agent should page a full
// observation instead.
const maxDiffLines = MaxElements

func diffObs(base, o *observation) *Diff {
	d := &Diff{Since: base.id}
	n := 0
	for _, e := range o.elements {
		old, had := base.sig[e.Ref]
		switch {
		case !had:
			d.Added = append(d.Added, e)
		case old != o.sig[e.Ref]:
			d.Changed = append(d.Changed, e)
		default:
			continue
		}
		if n++; n >= maxDiffLines {
			d.Truncated = true
			break
		}
	}
	var removed []string
	for ref := range base.sig {
		if _, ok := o.sig[ref]; !ok {
			removed = append(removed, ref)
		}
	}
	sort.Slice(removed, func(i, j int) bool { return refNum(removed[i]) < refNum(removed[j]) })
	if len(removed) > maxDiffLines {
		removed, d.Truncated = removed[:maxDiffLines], true
	}
	d.Removed = removed
	d.TextAdded, d.TextRemoved = lineDiff(base.text, o.text)
	return d
}

func refNum(r string) int { n, _ := strconv.Atoi(strings.TrimPrefix(r, "e")); return n }

// lineDiff is a multiset difference of text lines, capped so a rewritten
// page does not flood the diff.
func lineDiff(a, b string) (added, removed []string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	return capLines(minus(lb, la), 2000), capLines(minus(la, lb), 2000)
}

// minus is xs, in order, less one occurrence per line of ys.
func minus(xs, ys []string) []string {
	n := make(map[string]int, len(ys))
	for _, l := range ys {
		n[l]++
	}
	var out []string
	for _, l := range xs {
		if n[l] > 0 {
			n[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}

func capLines(ls []string, budget int) []string {
	var out []string
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		r := []rune(l)
		if len(r) > 200 {
			l = string(r[:199]) + "…"
		}
		if budget -= len(l); budget < 0 {
			out = append(out, "…")
			break
		}
		out = append(out, l)
	}
	return out
}

func textForm(ob *Observation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "observation %s tab %s\n", ob.ID, ob.TabID)
	fmt.Fprintf(&b, "url %s\ntitle %s\n", ob.URL, quote(ob.Title))
	fmt.Fprintf(&b, "viewport %dx%d scroll %d,%d expires-in %ds\n", ob.Viewport.Width, ob.Viewport.Height, ob.ScrollX, ob.ScrollY, (ob.ExpiresIn+999)/1000)
	c := ob.Counts
	for _, n := range ob.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if d := ob.Diff; d != nil {
		fmt.Fprintf(&b, "diff since %s: %d added, %d changed, %d removed (of %d elements); text +%d -%d lines\n",
			d.Since, len(d.Added), len(d.Changed), len(d.Removed), c.Elements, len(d.TextAdded), len(d.TextRemoved))
		if d.Truncated {
			b.WriteString("left out: the diff was cut; observe without since for the full list\n")
		}
		for _, e := range d.Added {
			b.WriteString("+ " + line(e) + "\n")
		}
		for _, e := range d.Changed {
			b.WriteString("~ " + line(e) + "\n")
		}
		for _, r := range d.Removed {
			b.WriteString("- " + r + "\n")
		}
		for _, l := range d.TextAdded {
			b.WriteString("text+ " + l + "\n")
		}
		for _, l := range d.TextRemoved {
			b.WriteString("text- " + l + "\n")
		}
		writeRegions(&b, ob.Regions)
		return b.String()
	}
	fmt.Fprintf(&b, "elements %s (%d in viewport), ", span(c.ElementsFrom, c.ElementsTo, c.Elements), c.InViewport)
	if c.Regions > 0 {
		fmt.Fprintf(&b, "regions %d, ", c.Regions)
	}
	fmt.Fprintf(&b, "text chars %s", span(c.TextFrom, c.TextTo, c.TextChars))
	if c.TextLinesDropped > 0 {
		fmt.Fprintf(&b, " (%d name-only lines left out)", c.TextLinesDropped)
	}
	b.WriteByte('\n')
	if len(ob.LeftOut) > 0 {
		fmt.Fprintf(&b, "left out: %s; cursor %q\n", strings.Join(ob.LeftOut, ", "), ob.NextCursor)
	}
	for _, e := range ob.Elements {
		b.WriteString(line(e))
		b.WriteByte('\n')
	}
	writeRegions(&b, ob.Regions)
	if ob.Text != "" {
		b.WriteString("text:\n")
		b.WriteString(ob.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func writeRegions(b *strings.Builder, rs []Region) {
	for _, r := range rs {
		fmt.Fprintf(b, "%s region %s at %d,%d %dx%d: %s\n", r.ID, quote(r.Label), r.Bounds.X, r.Bounds.Y, r.Bounds.W, r.Bounds.H, r.Hint)
	}
}

// span renders a shown range of a total: "all 17", "1-200 of 523", "none of 9".
func span(from, to, total int) string {
	switch {
	case from == 1 && to == total:
		return fmt.Sprintf("all %d", total)
	case from == 0:
		return fmt.Sprintf("none of %d", total)
	}
	return fmt.Sprintf("%d-%d of %d", from, to, total)
}

// dropNameLines removes the page text lines made only of element names and
// select option labels: the element list already carries them, and on a
// control-heavy page they are most of the text. It returns the text and how
// many lines it dropped.
func dropNameLines(text string, elems []rawElement) (string, int) {
	byFirst := map[rune][]string{}
	add := func(n string) {
		n = strings.TrimSpace(n)
		if n == "" {
			return
		}
		r, _ := utf8.DecodeRuneInString(n)
		byFirst[r] = append(byFirst[r], n)
	}
	for _, e := range elems {
		add(e.Name)
		for _, o := range e.Options {
			add(o)
		}
	}
	for r, ns := range byFirst {
		sort.Slice(ns, func(i, j int) bool { return len(ns[i]) > len(ns[j]) })
		byFirst[r] = slices.Compact(ns)
	}
	onlyNames := func(l string) bool {
		l = strings.TrimSpace(l)
		if l == "" {
			return false
		}
		for l != "" {
			r, _ := utf8.DecodeRuneInString(l)
			hit := false
			for _, n := range byFirst[r] {
				if strings.HasPrefix(l, n) {
					l, hit = strings.TrimLeft(l[len(n):], " \t"), true
					break
				}
			}
			if !hit {
				return false
			}
		}
		return true
	}
	var b strings.Builder
	dropped := 0
	for i, l := range strings.Split(text, "\n") {
		if onlyNames(l) {
			dropped++
			continue
		}
		if i > 0 && b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String(), dropped
}
