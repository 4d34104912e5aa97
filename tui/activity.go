package tui

import (
	"github.com/tabwarden/tabwarden/consent"
)

// activityLog shows the newest activity lines that fit, newest last.
type activityLog struct {
	s     consent.State
	limit int // most lines shown; 0 = as many as fit
	st    styles
}

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
	return m
}

// Render shows the newest lines that fit in h.
func (a activityLog) Render(w, h int) string { return block(a.lines(w, h), w, h) }

func (a activityLog) lines(w, h int) []string {
	if h <= 0 {
		return nil
	}
	out := []string{a.st.rule.Render(rule("Activity", w, "─"))}
	if len(a.s.Activity) == 0 {
		return append(out, "  Nothing yet.")[:min(h, 2)]
	}
	names := a.names()
	n := min(a.shown(), h-1)
	for _, e := range a.s.Activity[len(a.s.Activity)-n:] {
		who := names[e.Conversation]
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
		line := trunc(e.Time.Format("15:04:05")+" "+mark+who+": "+clean(e.Text), w)
		if e.Warn {
			line = a.st.warn.Render(line)
		}
		out = append(out, line)
	}
	return out
}

// desired is the height the log would use if it had room.
func (a activityLog) desired() int { return 1 + max(1, a.shown()) }
