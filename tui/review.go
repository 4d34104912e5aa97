package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/viewport"
	"github.com/tabwarden/tabwarden/consent"
)

// reviewPanel is the focused review: everything the operator needs to answer
// the gate with one key. Its chrome (title, conversation, origin,
// consequence, keys) never scrolls; the "what will happen" body scrolls in
// a viewport when it does not fit.
type reviewPanel struct {
	r        *consent.Review
	tabLabel string
	// tabID and tabTitle are the tab's parts, for a line that drops
	// whole parts to fit.
	tabID, tabTitle string
	now             time.Time
	st              styles
	// vp holds the body, sized by the layout; nil when only measuring.
	vp *viewport.Model
}

// originLines lays out the origin so it is never cut: on the label's line
// when both fit, otherwise alone on its own line at column 0. Only an origin
// wider than the whole terminal is broken, and then into full-width pieces
// so not a character is lost.
func originLines(r *consent.Review, w int) []string {
	type entry struct{ label, origin string }
	var es []entry
	if r.OriginUnicode != "" && r.OriginUnicode != r.Origin {
		es = []entry{{"origin", clean(r.OriginUnicode) + " (decoded)"}, {"raw", clean(r.Origin)}}
	} else {
		es = []entry{{"origin", clean(r.Origin)}}
	}
	var out []string
	for _, e := range es {
		if fieldLabelWidth+1+width(e.origin) <= w {
			out = append(out, padRight(e.label, fieldLabelWidth)+" "+e.origin)
			continue
		}
		out = append(out, e.label+" (in full on the next line):")
		rest := []rune(e.origin)
		for len(rest) > 0 {
			n := min(len(rest), max(w, 1))
			for n > 1 && width(string(rest[:n])) > w {
				n--
			}
			out = append(out, string(rest[:n]))
			rest = rest[n:]
		}
	}
	return out
}

// originWidth is the widest origin line the panel shows, for layout decisions.
func originWidth(r *consent.Review) int {
	w := fieldLabelWidth + 1 + width(clean(r.Origin))
	if r.OriginUnicode != "" && r.OriginUnicode != r.Origin {
		w = max(w, fieldLabelWidth+1+width(clean(r.OriginUnicode)+" (decoded)"))
	}
	return w
}

func (p reviewPanel) title(w int) string {
	t := clean(p.r.Title)
	if t == "" {
		t = "Review"
	}
	left := "══ " + t + " (" + string(p.r.Kind) + ") "
	right := " " + remaining(p.r.Deadline, p.now) + " ══"
	if width(left)+width(right) > w {
		// The kind goes whole before the title is cut.
		left = "══ " + t + " "
	}
	if width(left)+width(right) > w {
		left = trunc(left, max(0, w-width(right)-1)) + " "
	}
	fill := max(0, w-width(left)-width(right))
	return trunc(left+strings.Repeat("═", fill)+right, w)
}

// head is the fixed part above the body.
func (p reviewPanel) head(w int) []string {
	conv := clean(p.r.ConversationName)
	if conv == "" {
		conv = clean(string(p.r.Conversation))
	}
	// Whole parts drop to fit, never a word cut ("from demo age…"): the
	// page title's words from its end, then the title, then the tab.
	lead := padRight("from", fieldLabelWidth) + " " + conv
	forms := []string{}
	if p.tabID != "" {
		tab := "  tab " + p.tabID
		words := strings.Fields(p.tabTitle)
		for n := len(words); n >= 1; n-- {
			t := strings.Join(words[:n], " ")
			if n < len(words) {
				t += " …"
			}
			forms = append(forms, lead+tab+" "+t)
		}
		forms = append(forms, lead+tab)
	} else if p.tabLabel != "" {
		forms = append(forms, lead+"  tab "+p.tabLabel)
	}
	first := firstFit(w, append(forms, lead)...)
	return append([]string{first}, originLines(p.r, w)...)
}

// tail is the fixed part below the body: consequence and keys.
func (p reviewPanel) tail(w int, scroll string) []string {
	var b blockWriter
	b.w = w
	cons := clean(p.r.Consequence)
	if cons == "" {
		cons = "(no consequence text)"
	}
	b.field("effect", cons)
	if s := p.r.Scope; s != nil {
		// What `s` would allow, in words, before it is pressed.
		if s.Refused {
			b.field("s", "not offered: "+clean(s.Text))
		} else {
			b.field("s", clean(s.Text))
		}
	}
	label := clean(p.r.ApproveLabel)
	if label == "" {
		label = "approve"
	}
	keys := "a " + label + "  d deny"
	if s := p.r.Scope; s != nil && !s.Refused {
		keys = "a " + label + "  s for a while  d deny"
	}
	if scroll != "" {
		// Shorter forms before none: a body cut without a mark reads as
		// the whole of it.
		// "lines" goes last: "1-1 of 2" alone does not say what it counts.
		short := strings.TrimSuffix(scroll, " · j/k pgup/pgdn")
		short = strings.Replace(short, " hidden for lack of room", " hidden", 1)
		for _, form := range []string{scroll, short + " · j/k", short, strings.TrimPrefix(short, "lines ")} {
			if width(keys)+2+width(form) <= w {
				keys += strings.Repeat(" ", w-width(keys)-width(form)) + form
				break
			}
		}
	}
	return append(b.lines, keys)
}

// chromeHeight is the number of lines the panel needs besides its body.
func (p reviewPanel) chromeHeight(w int) int {
	return 1 + len(p.head(w)) + len(p.tail(w, ""))
}

// Render draws the panel in exactly h lines of width w; p.vp holds the body
// already sized to w × (h - chrome).
func (p reviewPanel) Render(w, h int) string { return block(p.lines(w, h), w, h) }

func (p reviewPanel) lines(w, h int) []string {
	vp := p.vp
	st := p.st
	out := []string{st.review.Render(p.title(w))}
	for i, l := range p.head(w) {
		if i == 0 {
			out = append(out, l)
			continue
		}
		out = append(out, st.origin.Render(l))
	}
	scroll := ""
	if vp != nil && vp.TotalLineCount() > vp.Height() {
		first := vp.YOffset() + 1
		last := min(vp.YOffset()+vp.Height(), vp.TotalLineCount())
		scroll = fmt.Sprintf("lines %d-%d of %d · j/k pgup/pgdn", first, last, vp.TotalLineCount())
		if vp.Height() == 0 {
			scroll = countOf(vp.TotalLineCount(), "line") + " hidden for lack of room"
		}
	}
	if d := p.r.Disclosure; d != nil && p.r.Kind == consent.KindDisclosure {
		// The size stays in view however far the result is scrolled.
		scroll = strings.TrimSuffix(shortBytes(int64(d.Size))+" · "+scroll, " · ")
	}
	tail := p.tail(w, scroll)
	bodyH := h - len(out) - len(tail)
	if vp != nil && bodyH >= 0 && bodyH < vp.Height() && vp.YOffset()+bodyH < vp.TotalLineCount() {
		// The panel got fewer lines than its viewport (a panel opened
		// above it): say how much of the body shows rather than cut it
		// without a mark.
		scroll = fmt.Sprintf("lines %d-%d of %d · j/k pgup/pgdn", vp.YOffset()+1, vp.YOffset()+bodyH, vp.TotalLineCount())
		if bodyH == 0 {
			scroll = countOf(vp.TotalLineCount(), "line") + " hidden for lack of room"
		}
		if d := p.r.Disclosure; d != nil && p.r.Kind == consent.KindDisclosure {
			scroll = shortBytes(int64(d.Size)) + " · " + scroll
		}
		tail = p.tail(w, scroll)
		bodyH = h - len(out) - len(tail)
	}
	if bodyH > 0 {
		var body []string
		if vp != nil {
			body = strings.Split(vp.View(), "\n")
		}
		out = append(out, fitLines(body, w, bodyH)...)
	}
	tail[len(tail)-1] = st.keys.Render(tail[len(tail)-1])
	// Too short for the whole chrome: the consequence text yields first,
	// then the "from" line; the title, the origin and the keys stay.
	for len(out)+len(tail) > h && len(tail) > 1 {
		tail = append(tail[:len(tail)-2], tail[len(tail)-1])
	}
	if len(out)+len(tail) > h && len(out) > 1 {
		out = append(out[:1], out[2:]...)
	}
	return append(out, tail...)
}
