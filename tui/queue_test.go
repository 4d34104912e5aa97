package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// A review waiting in the queue counts down with the clock (the model's
// once-a-second tick moves now), and the one on screen shows no queue
// countdown: its panel has its own.
func TestQueueCountsDown(t *testing.T) {
	s := queueCountdownState()
	at := func(now time.Time) []string {
		lines := queue{s: s, now: now, st: defaultStyles()}.lines(120)
		for i, l := range lines {
			lines[i] = ansi.Strip(l)
		}
		return lines
	}
	for _, c := range []struct {
		after        time.Duration
		action, read string
	}{
		{0, "24s left", "4m05s left"},
		{10 * time.Second, "14s left", "3m55s left"},
		{24 * time.Second, "expired", "3m41s left"},
	} {
		lines := at(fixedNow.Add(c.after))
		if len(lines) != 4 {
			t.Fatalf("queue lines %q", lines)
		}
		if strings.Contains(lines[1], "left") || strings.Contains(lines[1], "expired") {
			t.Errorf("+%s: the review on screen shows a queue countdown: %q", c.after, lines[1])
		}
		if !strings.Contains(lines[2], "needs attention "+c.action) {
			t.Errorf("+%s: action row %q, want %q", c.after, lines[2], c.action)
		}
		if !strings.Contains(lines[3], "needs attention "+c.read) {
			t.Errorf("+%s: read row %q, want %q", c.after, lines[3], c.read)
		}
	}
}
