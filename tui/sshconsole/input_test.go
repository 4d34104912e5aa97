package sshconsole

import (
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// Bytes that carry an `a` without being an `a` key press: a bracketed
// paste and replies a terminal gives to capability queries.
var untrustedInput = []struct{ name, bytes string }{
	{"bracketed paste", "\x1b[200~a\x1b[201~"},
	{"bracketed paste of many", "\x1b[200~aaaa\r\na\x1b[201~"},
	{"XTVERSION reply", "\x1bP>|xterm(a)\x1b\\"},
	{"OSC 11 background reply", "\x1b]11;rgb:aaaa/aaaa/aaaa\x1b\\"},
	{"DECRQM reply", "\x1b[?2026;2$y"},
	{"DA1 reply", "\x1b[?62;22c"},
	{"DCS with a", "\x1bPa\x1b\\"},
}

// None of them approves the review on screen; a real `a` afterwards does
// (so the screen was listening all along).
func TestPasteAndTerminalRepliesApproveNothing(t *testing.T) {
	ana := sshtest.NewKey(t, "ana")
	r := newRig(t, ana)
	s := r.attach(ana)
	ch := ask(r.eng, nav("https://alpha.test"))
	rev := focused(t, r.eng)
	s.WaitFor("alpha.test")
	// The key-ahead guard counts from when the review reached this
	// screen (no later than the WaitFor above), not from the engine's
	// ShownAt: a screen drawn late under load would refuse the key.
	time.Sleep(2 * testDelay)

	for _, in := range untrustedInput {
		s.Send(in.bytes)
	}
	// `?` after them shows the help screen: every byte before it was read.
	s.Send("?")
	s.WaitFor("page down")
	if d := r.mem.Kind(audit.KindDecision); len(d) != 0 {
		t.Fatalf("untrusted input decided: %+v", d)
	}
	if k := r.mem.Kind(audit.KindKeyIgnored); len(k) != 0 {
		t.Fatalf("untrusted input reached the decision keys: %+v", k)
	}
	if st := r.eng.Snapshot(); st.Focused == nil || st.Focused.ID != rev.ID {
		t.Fatalf("the review is no longer pending: %+v", st.Focused)
	}
	select {
	case err := <-ch:
		t.Fatalf("Ask returned %v before any key press", err)
	default:
	}

	s.Send("?") // close help
	s.Send("a")
	if err := waitResult(t, ch); err != nil {
		t.Fatalf("a real a did not approve: %v", err)
	}
	if d := r.mem.Kind(audit.KindDecision); len(d) != 1 || d[0].Decision != "approved" || d[0].Operator != "ana" {
		t.Fatalf("decisions %+v", d)
	}
}
