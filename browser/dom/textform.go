package dom

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

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
			b.WriteString(optionQuoter.Replace(o))
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

// optionQuoter keeps an option label from reading as the list's separator.
var optionQuoter = strings.NewReplacer("|", "¦", "\n", " ", " ", "\u00a0")

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

// render builds the page of o starting at the given offsets, or the diff
// against base when base is not nil. A digest text page ends at a line or
// word end when one falls in its second half.
func (t *Tab) render(o *observation, base *observation, elemOff, textOff, textChars int, digest bool, notes []string, img []byte) *Observation {
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
			ob.Elements = o.elements[elemOff:end:end]
			c.ElementsFrom, c.ElementsTo = elemOff+1, end
		}
		runes := utf8.RuneCountInString(o.text)
		if textOff < runes {
			end := min(textOff+textChars, runes)
			ob.Text = runeSlice(o.text, textOff, end)
			if digest && end < runes {
				ob.Text = cutAtBoundary(ob.Text)
				end = textOff + utf8.RuneCountInString(ob.Text)
			}
			c.TextFrom, c.TextTo = textOff+1, end
		}
		nextE, nextT := len(o.elements), runes
		if c.ElementsTo > 0 && c.ElementsTo < len(o.elements) {
			ob.LeftOut = append(ob.LeftOut, fmt.Sprintf("elements %d-%d", c.ElementsTo+1, len(o.elements)))
			nextE = c.ElementsTo
		} else if elemOff < len(o.elements) {
			nextE = len(o.elements)
		}
		if c.TextTo > 0 && c.TextTo < runes {
			ob.LeftOut = append(ob.LeftOut, fmt.Sprintf("text chars %d-%d", c.TextTo+1, runes))
			nextT = c.TextTo
		}
		if o.textLen > runes {
			ob.LeftOut = append(ob.LeftOut, fmt.Sprintf("text chars %d-%d (not kept)", runes+1, o.textLen))
		}
		if nextE < len(o.elements) || nextT < runes {
			ob.NextCursor = fmt.Sprintf("%s:%d:%d", o.id, nextE, nextT)
		}
	}
	ob.TextForm = textForm(ob)
	return ob
}

// cutAtBoundary shortens s to its last line end, else its last word end,
// when that keeps at least half of s; otherwise s is returned whole.
func cutAtBoundary(s string) string {
	half := len(s) / 2
	if i := strings.LastIndexByte(s, '\n'); i >= half {
		return s[:i]
	}
	if i := strings.LastIndexAny(s, " \t"); i >= half {
		return s[:i]
	}
	return s
}

// runeSlice is string([]rune(s)[from:to]) without converting all of s.
func runeSlice(s string, from, to int) string {
	start, i := len(s), 0
	for off := range s {
		if i == from {
			start = off
		}
		if i == to {
			return s[start:off]
		}
		i++
	}
	return s[start:]
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
