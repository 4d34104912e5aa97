package sshconsole

import (
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// Each SSH screen is called on its own terms: the bell on every screen, a
// desktop notification only where that screen's own terminal (the TERM
// its client sent with the pty) shows one, the pending count in each
// title. A scoped grant given on one screen is listed and revoked on
// another, each attributed to its operator.
func TestSSHScreensAreCalledAndShareGrants(t *testing.T) {
	ana, bo := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "bo")
	r := newRig(t, ana, bo)
	kitty := r.attachTerm(ana, "xterm-kitty")
	plain := r.attachTerm(bo, "xterm-256color")
	kitty.WaitFor("Conversations")
	plain.WaitFor("Conversations")
	nk, np := len(kitty.Raw()), len(plain.Raw())

	asked := ask(r.eng, consent.Request{Gate: consent.GateAction, Conversation: "c1", Tab: "t1", Origin: "https://shop.test",
		Action: &consent.Action{Type: consent.ActionClick, Ref: "e1", Role: "button", Name: "Filter"}})
	kitty.WaitRaw("a kitty desktop notification", "\x1b]99;")
	plain.WaitRaw("the pending count in the title", "tabwarden (1 pending)")
	kout, pout := kitty.Raw()[nk:], plain.Raw()[np:]
	if !strings.Contains(kout, "\a") || !strings.Contains(kout, "tabwarden: Allow this action?") {
		t.Fatalf("kitty screen: no bell or no title in the notification: %q", kout)
	}
	if !strings.Contains(pout, "\a") {
		t.Fatalf("xterm screen: no bell: %q", pout)
	}
	for _, seq := range []string{"\x1b]99;", "\x1b]9;", "\x1b]777;"} {
		if strings.Contains(pout, seq) {
			t.Fatalf("xterm screen got a desktop sequence %q it does not show: %q", seq, pout)
		}
	}

	// ana answers with s on her screen (after the key-ahead guard) ...
	kitty.WaitFor("s for a while")
	time.Sleep(testDelay + 100*time.Millisecond)
	kitty.Send("s")
	if err := waitResult(t, asked); err != nil {
		t.Fatal(err)
	}
	// ... bo sees the grant's chip and revokes it from his G list.
	plain.WaitFor("s-grants: [click https://shop.test")
	plain.Send("G")
	plain.WaitFor("by ana")
	plain.Send("X")
	plain.WaitFor("no active grants")
	var given, revoked audit.Record
	for _, rec := range r.mem.Records() {
		switch rec.Kind {
		case audit.KindGrant:
			given = rec
		case audit.KindGrantRevoked:
			revoked = rec
		}
	}
	if given.Operator != "ana" || given.KeyFingerprint != ana.Fingerprint() || revoked.Operator != "bo" || revoked.KeyFingerprint != bo.Fingerprint() || revoked.Grant != given.Grant {
		t.Fatalf("grant %+v, revocation %+v: not attributed to ana and bo", given, revoked)
	}
}
