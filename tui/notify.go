package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/tabwarden/tabwarden/consent"
)

// The operator is called (design.md §4): each screen rings its terminal's
// bell when a new review arrives and, where its terminal shows them,
// raises a desktop notification; every screen's title carries the count
// of pending reviews. Which desktop sequence a screen's terminal takes is
// read from that screen's environment (the console's own, or what the SSH
// client sent with its pty: TERM, TERM_PROGRAM, …), as the page view's
// detection is.

// NotifyMode is --notify.
type NotifyMode string

// The --notify values. NotifyDesktop (the default) rings the bell and
// raises a desktop notification where the terminal supports one.
const (
	NotifyDesktop NotifyMode = "desktop"
	NotifyBell    NotifyMode = "bell"
	NotifyOff     NotifyMode = "off"
)

// ParseNotifyMode reads a --notify value; "" is desktop.
func ParseNotifyMode(s string) (NotifyMode, error) {
	switch m := NotifyMode(s); m {
	case "":
		return NotifyDesktop, nil
	case NotifyDesktop, NotifyBell, NotifyOff:
		return m, nil
	}
	return "", fmt.Errorf("use desktop, bell or off")
}

// desktopProto is the desktop-notification sequence a terminal understands.
type desktopProto string

const (
	desktopNone   desktopProto = ""
	desktopOSC9   desktopProto = "osc9"   // iTerm2, WezTerm, Ghostty, ConEmu
	desktopOSC777 desktopProto = "osc777" // foot, rxvt-unicode, VTE terminals
	desktopOSC99  desktopProto = "osc99"  // kitty
)

// notifyGap is the least time between two calls on one screen: a burst of
// reviews (a batch of agents) rings once; the title keeps the count.
const notifyGap = time.Second

// detectDesktop reads a screen's environment. Terminal multiplexers get
// none: tmux and screen drop or garble these sequences, and their own bell
// handling (bell-action, the status line's bell flag) carries the bell.
func detectDesktop(env tea.EnvMsg) desktopProto {
	term := env.Getenv("TERM")
	prog := strings.ToLower(env.Getenv("TERM_PROGRAM"))
	switch {
	case env.Getenv("TMUX") != "" || strings.HasPrefix(term, "tmux") || strings.HasPrefix(term, "screen") || prog == "tmux":
		return desktopNone
	case term == "xterm-kitty" || env.Getenv("KITTY_WINDOW_ID") != "":
		return desktopOSC99
	case prog == "iterm.app" || prog == "wezterm" || prog == "ghostty" || term == "xterm-ghostty" || env.Getenv("WEZTERM_PANE") != "":
		return desktopOSC9
	case strings.HasPrefix(term, "foot") || strings.HasPrefix(term, "rxvt-unicode") || env.Getenv("VTE_VERSION") != "":
		return desktopOSC777
	}
	return desktopNone
}

// notifyState is a screen's memory of what it has called the operator for.
type notifyState struct {
	known   map[string]bool // review ids already seen on this screen
	desktop desktopProto
	last    time.Time
}

// notifyField is site or agent text made safe inside an OSC payload: no
// control characters (clean), no separators the sequences use, bounded.
func notifyField(s string) string {
	s = strings.ReplaceAll(clean(s), ";", ",")
	return trunc(s, 120)
}

// desktopSeq is the notification for review r in protocol p.
func desktopSeq(p desktopProto, r consent.Review, pending int) string {
	title := "tabwarden: " + notifyField(r.Title)
	conv := r.ConversationName
	if conv == "" {
		conv = string(r.Conversation)
	}
	body := notifyField(conv) + " · " + notifyField(r.Origin)
	if pending > 1 {
		body += fmt.Sprintf(" (%d pending)", pending)
	}
	switch p {
	case desktopOSC9:
		return "\x1b]9;" + title + " — " + body + "\x07"
	case desktopOSC777:
		return "\x1b]777;notify;" + title + ";" + body + "\x07"
	case desktopOSC99:
		return "\x1b]99;i=tw:d=0;" + title + "\x1b\\" + "\x1b]99;i=tw:d=1:p=body;" + body + "\x1b\\"
	}
	return ""
}

// notifyUpdate notes reviews new to this screen and returns the bell (and
// desktop notification) that calls the operator, at most one per
// notifyGap. The first snapshot a screen gets counts too: an operator
// joining over SSH while reviews wait is called for them.
func (m *Model) notifyUpdate() tea.Cmd {
	n := &m.notify
	if n.known == nil {
		n.known = map[string]bool{}
	}
	var fresh *consent.Review
	live := make(map[string]bool, len(m.state.Queue))
	for i, r := range m.state.Queue {
		live[r.ID] = true
		if !n.known[r.ID] {
			fresh = &m.state.Queue[i]
		}
	}
	n.known = live
	if fresh == nil || m.opts.Notify == NotifyOff {
		return nil
	}
	now := time.Now()
	if now.Sub(n.last) < notifyGap {
		return nil
	}
	n.last = now
	seq := "\a"
	if m.opts.Notify != NotifyBell {
		seq += desktopSeq(n.desktop, *fresh, len(m.state.Queue))
	}
	return tea.Raw(seq)
}

// windowTitle is the terminal's title: the pending count first, so it
// shows in a task bar or a tmux status line; site-derived text cleaned.
func (m Model) windowTitle() string {
	n := len(m.state.Queue)
	if n == 0 {
		return "tabwarden"
	}
	t := fmt.Sprintf("tabwarden (%d pending)", n)
	if f := m.state.Focused; f != nil {
		t += " · " + notifyField(f.Title) + " · " + notifyField(f.Origin)
	}
	return t
}
