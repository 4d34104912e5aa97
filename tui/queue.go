package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

// queue lists every pending review. Reviews other than the one on screen
// wait for the operator to select their tab: they "need attention", with
// the time they have left before they fail needs_attention (design.md §4).
type queue struct {
	s   consent.State
	now time.Time
	st  styles
}

func (q queue) Render(w, h int) string { return q.section(w).render(w, h) }

// section is the queue laid out once at width w, for measuring and drawing.
func (q queue) section(w int) section {
	lines := q.lines(w)
	return section{len(lines), func(w, h int) string { return block(lines, w, h) }}
}

func (q queue) lines(w int) []string {
	out := []string{q.st.rule.Render(rule(fmt.Sprintf("Review queue (%d)", len(q.s.Queue)), w, "─"))}
	if len(q.s.Queue) == 0 {
		return append(out, "  No pending reviews.")
	}
	// The remaining-time column is as wide as its widest entry; rows
	// without one (the review on screen: its panel counts down) pad it.
	leftW := 0
	for _, r := range q.s.Queue {
		if !q.onScreen(r) && !r.QueueDeadline.IsZero() {
			leftW = max(leftW, width(remaining(r.QueueDeadline, q.now)))
		}
	}
	for _, r := range q.s.Queue {
		mark, status := "  ", "needs attention"
		if q.onScreen(r) {
			mark, status = "▶ ", "on screen"
		}
		left := ""
		if !q.onScreen(r) && !r.QueueDeadline.IsZero() {
			left = remaining(r.QueueDeadline, q.now)
		}
		conv := clean(r.ConversationName)
		if conv == "" {
			conv = clean(string(r.Conversation))
		}
		origin := clean(r.Origin)
		head := mark + padRight(string(r.Kind), 10) + " " + padRight(status, 15) + " "
		if leftW > 0 {
			head += padRight(left, leftW) + " "
		}
		// The origin is never cut; the conversation name yields first.
		room := w - width(head) - 2 - width(origin)
		if room >= 4 {
			out = append(out, q.style(head+trunc(conv, room)+"  "+origin, status))
			continue
		}
		out = append(out, q.style(trunc(head+conv, w), status))
		if fieldLabelWidth+1+width(origin) <= w {
			out = append(out, strings.Repeat(" ", fieldLabelWidth+1)+origin)
		} else {
			out = append(out, originLines(&consent.Review{Origin: r.Origin}, w)[1:]...)
		}
	}
	return out
}

func (q queue) onScreen(r consent.Review) bool {
	return q.s.Focused != nil && q.s.Focused.ID == r.ID
}

func (q queue) style(line, status string) string {
	if status == "needs attention" {
		return q.st.warn.Render(line)
	}
	return line
}
