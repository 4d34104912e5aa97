package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/tabwarden/tabwarden/consent"
)

// raws runs cmd (and any batch in it) and returns what it writes raw.
func raws(cmd tea.Cmd) string {
	if cmd == nil {
		return ""
	}
	switch msg := cmd().(type) {
	case tea.RawMsg:
		s, _ := msg.Msg.(string)
		return s
	case tea.BatchMsg:
		var b strings.Builder
		for _, c := range msg {
			b.WriteString(raws(c))
		}
		return b.String()
	}
	return ""
}

func TestDesktopDetectedPerScreenEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want desktopProto
	}{
		{[]string{"TERM=xterm-256color"}, desktopNone},
		{[]string{"TERM=xterm-kitty"}, desktopOSC99},
		{[]string{"TERM=xterm-256color", "TERM_PROGRAM=iTerm.app"}, desktopOSC9},
		{[]string{"TERM=xterm-256color", "TERM_PROGRAM=WezTerm"}, desktopOSC9},
		{[]string{"TERM=xterm-ghostty"}, desktopOSC9},
		{[]string{"TERM=foot"}, desktopOSC777},
		{[]string{"TERM=xterm-256color", "VTE_VERSION=7600"}, desktopOSC777},
		{[]string{"TERM=tmux-256color", "TERM_PROGRAM=tmux", "KITTY_WINDOW_ID=1"}, desktopNone},
		{[]string{"TERM=screen"}, desktopNone},
	} {
		if got := detectDesktop(tea.EnvMsg(c.env)); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}

// hostileReview carries escapes and separators in every field the
// notification and the title show.
func hostileReview(id string) consent.Review {
	return consent.Review{ID: id, Kind: consent.KindAction, Title: "Allow this action?\x07\x1b]0;pwned\x07",
		Conversation: "c1", ConversationName: "agent;one\x1b[2J", Tab: "t1", Origin: "https://shop.test", OriginUnicode: "https://shop.test"}
}

func TestNewReviewRingsAndNotifiesOncePerGap(t *testing.T) {
	f := newFake(consent.State{Profile: consent.ProfileStrict})
	m := New(f, Options{Now: fixedClock})
	defer m.Close()
	m = step(m, tea.EnvMsg{"TERM=foot"})
	if got := raws(m.notifyUpdate()); got != "" {
		t.Fatalf("no review, yet %q", got)
	}
	r := hostileReview("r1")
	m.setState(consent.State{Queue: []consent.Review{r}, Focused: &r})
	got := raws(m.notifyUpdate())
	if !strings.HasPrefix(got, "\a\x1b]777;notify;tabwarden: Allow this action?") || !strings.HasSuffix(got, "\x07") {
		t.Fatalf("bell + OSC 777: %q", got)
	}
	// One BEL to ring, one to end the sequence: nothing from the site.
	if strings.Count(got, "\x07") != 2 || strings.Count(got, "\x1b") != 1 || strings.Count(got, ";") != 3 {
		t.Fatalf("site text escaped the payload: %q", got)
	}
	if title := m.windowTitle(); title != "tabwarden (1 pending) · Allow this action?��]0,pwned� · https://shop.test" {
		t.Fatalf("title %q", title)
	}
	// The same review again calls nobody; a new one within the gap waits
	// for the next change after it (the title already counts it).
	if got := raws(m.notifyUpdate()); got != "" {
		t.Fatalf("same review rang again: %q", got)
	}
	r2 := hostileReview("r2")
	m.setState(consent.State{Queue: []consent.Review{r, r2}, Focused: &r})
	if got := raws(m.notifyUpdate()); got != "" {
		t.Fatalf("rang twice within %s: %q", notifyGap, got)
	}
	m.notify.last = time.Now().Add(-notifyGap)
	r3 := hostileReview("r3")
	m.setState(consent.State{Queue: []consent.Review{r, r2, r3}, Focused: &r})
	if got := raws(m.notifyUpdate()); !strings.Contains(got, "(3 pending)") {
		t.Fatalf("after the gap: %q", got)
	}
}

func TestNotifyModes(t *testing.T) {
	r := hostileReview("r1")
	for mode, want := range map[NotifyMode]string{NotifyBell: "\a", NotifyOff: "", NotifyDesktop: "\a\x1b]99;"} {
		f := newFake(consent.State{})
		m := New(f, Options{Now: fixedClock, Notify: mode})
		m = step(m, tea.EnvMsg{"TERM=xterm-kitty"})
		m.setState(consent.State{Queue: []consent.Review{r}, Focused: &r})
		got := raws(m.notifyUpdate())
		if !strings.HasPrefix(got, want) || (mode == NotifyBell && got != "\a") || (mode == NotifyOff && got != "") {
			t.Errorf("%s: %q", mode, got)
		}
		m.Close()
	}
	// A terminal without desktop notifications (xterm) gets the bell alone.
	f := newFake(consent.State{})
	m := New(f, Options{Now: fixedClock})
	defer m.Close()
	m = step(m, tea.EnvMsg{"TERM=xterm"})
	m.setState(consent.State{Queue: []consent.Review{r}, Focused: &r})
	if got := raws(m.notifyUpdate()); got != "\a" {
		t.Errorf("xterm: %q", got)
	}
}
