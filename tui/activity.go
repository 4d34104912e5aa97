package tui

import (
	"strings"

	"github.com/tabwarden/tabwarden/consent"
)

// activityLog shows the newest activity entries that fit, newest last.
// An entry longer than the width wraps onto indented continuation lines
// instead of being cut: the log is where an agent says what it will ask
// next (the demo's instructions, credentials included), so every word of
// an entry on screen must be readable. The newest entry is never dropped:
// if it alone is taller than the section, its beginning is shown and the
// cut marked with "…". Older entries fill the rest whole, newest last; the
// oldest one shown may show only its end, marked "…" where it starts
// (narration ends with what to press, so the end is the part to keep).
// The section is therefore full whenever entries remain unshown, and the
// newest entry always ends on its last line.
type activityLog struct {
	s     consent.State
	limit int // most entries shown; 0 = as many as fit
	st    styles
}

// activityIndent is where an entry's text starts after "15:04:05 ! ";
// continuation lines start there too, so the time column stays clear.
const activityIndent = 11

// activityMinText is the narrowest text column worth wrapping into;
// below it an entry is cut to one line instead.
const activityMinText = 20

// shown is how many entries the log would show given room.
func (a activityLog) shown() int {
	n := len(a.s.Activity)
	if a.limit > 0 {
		n = min(n, a.limit)
	}
	return n
}

func (a activityLog) names() map[consent.ConversationID]string {
	m := make(map[consent.ConversationID]string, len(a.s.Conversations))
	for _, c := range a.s.Conversations {
		m[c.ID] = convLabel(c)
	}
	for _, en := range a.s.Ended {
		if name := clean(en.Name); name != "" {
			m[en.ID] = name
		}
	}
	return m
}

// newestHeight is how many lines the newest entry takes at width w (0
// with no entries).
func (a activityLog) newestHeight(w int) int {
	if a.shown() == 0 {
		return 0
	}
	lines, _ := a.entry(a.s.Activity[len(a.s.Activity)-1], a.names(), w)
	return len(lines)
}

// Render shows the newest entries that fit in h.
func (a activityLog) Render(w, h int) string { return block(a.lines(w, h), w, h) }

// section is the log at width w for a body of at most maxH lines. Its
// entries are wrapped once, newest first and only as many as maxH lines can
// show, for both its desired height and its drawing: the log holds up to
// consent.ActivityLimit entries, and View must not wrap them all, twice,
// on every frame. desired is exact up to maxH and at least maxH beyond it,
// which is all a layout bounded by maxH can tell apart.
func (a activityLog) section(w, maxH int) section {
	es := a.wrapped(w, maxH-1)
	desired := 2 // heading and "Nothing yet."
	if len(es) > 0 {
		desired = 1
		for _, e := range es {
			desired += len(e.lines)
		}
	}
	return section{desired, func(_, h int) string { return block(a.fit(es, w, h), w, h) }}
}

func (a activityLog) lines(w, h int) []string { return a.fit(a.wrapped(w, h-1), w, h) }

// activityEntry is one activity entry wrapped for a width.
type activityEntry struct {
	lines []string
	warn  bool
}

// wrapped wraps the newest entries, newest first, until they fill room
// lines or run out.
func (a activityLog) wrapped(w, room int) []activityEntry {
	entries := a.s.Activity[len(a.s.Activity)-a.shown():]
	names := a.names()
	var out []activityEntry
	for i := len(entries) - 1; i >= 0 && room > 0; i-- {
		lines, warn := a.entry(entries[i], names, w)
		out = append(out, activityEntry{lines, warn})
		room -= len(lines)
	}
	return out
}

// fit lays out es (newest first, from wrapped with at least h-1 lines'
// worth) in h lines. es is not modified.
func (a activityLog) fit(es []activityEntry, w, h int) []string {
	if h <= 0 {
		return nil
	}
	out := []string{a.st.rule.Render(rule("Activity", w, "─"))}
	if len(a.s.Activity) == 0 {
		return append(out, "  Nothing yet.")[:min(h, 2)]
	}
	room := h - 1
	// Newest first while whole entries fit.
	var blocks [][]string
	for _, e := range es {
		if room <= 0 {
			break
		}
		b := e.lines
		switch {
		case len(b) <= room:
		case len(blocks) == 0:
			// The newest alone is too tall: its beginning, cut marked.
			b = append([]string(nil), b[:room]...)
			b[room-1] = markCut(b[room-1], w)
		case room == 1:
			// One line of an older entry is a fragment ("…appeared") that
			// reads as noise; say instead how much is above.
			b = []string{a.st.dim.Render(trunc(strings.Repeat(" ", activityIndent-1)+"… "+countOf(a.shown()-len(blocks), "earlier entry")+" above", w))}
			blocks = append(blocks, b)
			room = 0
			continue
		default:
			// An older entry only partly fits: its end, which is where
			// the narration says what to press, marked as continued.
			b = append([]string(nil), b[len(b)-room:]...)
			b[0] = strings.Repeat(" ", activityIndent-1) + "…" + strings.TrimLeft(b[0], " ")
		}
		blocks = append(blocks, a.style(b, e.warn))
		room -= len(b)
	}
	for j := len(blocks) - 1; j >= 0; j-- {
		out = append(out, blocks[j]...)
	}
	return out
}

func (a activityLog) style(lines []string, warn bool) []string {
	if !warn {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = a.st.warn.Render(l)
	}
	return out
}

// entry renders one activity entry as its wrapped, unstyled lines, each
// at most w cells, and whether it is a warning.
func (a activityLog) entry(e consent.Activity, names map[consent.ConversationID]string, w int) ([]string, bool) {
	who := names[e.Conversation]
	if who == "" {
		who = clean(e.Name)
	}
	if who == "" {
		who = clean(string(e.Conversation))
	}
	if who == "" {
		who = "console"
	}
	mark := "  "
	if e.Warn {
		mark = "! "
	}
	head := e.Time.Format("15:04:05") + " " + mark
	body := who + ": " + clean(e.Text)
	if w-activityIndent < activityMinText {
		return []string{trunc(head+body, w)}, e.Warn
	}
	indent := strings.Repeat(" ", activityIndent)
	var lines []string
	for i, l := range wrap(body, w-activityIndent) {
		if i == 0 {
			lines = append(lines, head+l)
		} else {
			lines = append(lines, indent+l)
		}
	}
	return lines, e.Warn
}
