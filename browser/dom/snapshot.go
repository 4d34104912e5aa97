package dom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/proto"
)

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
	// derived is computed from elems and text once per generation pair:
	// observing an unchanged page reuses it.
	derived *derived
}

// derived is what observations take from one element list and text. It is
// shared by every observation of those generations and never modified.
type derived struct {
	token            string
	elemGen, textGen int
	elements         []Element // in-viewport first, then document order
	byRef            map[string]int
	sig              map[string]string
	text             string // the page text without name-only lines
	textRunes        int    // runes of text
	dropped          int    // lines dropNameLines left out
	rawUnits         int    // UTF-16 units of the text as sent
}

// derive builds the derived form of c's element list and text.
func derive(c snapCache) *derived {
	text, dropped := dropNameLines(c.text, c.elems)
	dv := &derived{
		token: c.token, elemGen: c.elemGen, textGen: c.textGen,
		byRef: make(map[string]int, len(c.elems)), sig: make(map[string]string, len(c.elems)),
		text: text, textRunes: utf8.RuneCountInString(text), dropped: dropped, rawUnits: utf16Len(c.text),
	}
	in, out := make([]Element, 0, len(c.elems)), []Element{}
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
		if _, dup := dv.byRef[e.Ref]; dup {
			continue
		}
		dv.byRef[e.Ref] = 0
		if !e.Offscreen {
			in = append(in, e)
		} else {
			out = append(out, e)
		}
	}
	dv.elements = append(in, out...)
	for i, e := range dv.elements {
		dv.byRef[e.Ref] = i
		dv.sig[e.Ref] = signature(e)
	}
	return dv
}

// utf16Len is len(utf16.Encode([]rune(s))) without building either.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

const imageHint = "use an image: observe with includeImage, then click {x,y}"

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
	if c.derived == nil || c.derived.token != c.token || c.derived.elemGen != c.elemGen || c.derived.textGen != c.textGen {
		c.derived = derive(c)
	}
	t.mu.Lock()
	t.snap = c
	t.seq++
	seq := t.seq
	t.mu.Unlock()
	dv := c.derived
	o := &observation{
		id:           newID(seq),
		state:        raw.State,
		created:      t.now(),
		elements:     dv.elements,
		byRef:        dv.byRef,
		sig:          dv.sig,
		text:         dv.text,
		textLen:      dv.textRunes,
		droppedLines: dv.dropped,
	}
	if raw.TextLen > len(c.text) {
		// Cut in the page at maxStoredText UTF-16 units; report the rest.
		o.textLen += raw.TextLen - dv.rawUnits
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
