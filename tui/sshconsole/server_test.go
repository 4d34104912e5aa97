package sshconsole

import (
	"errors"
	"github.com/tabwarden/tabwarden/consent"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// Two operators see the same review; the first decision wins; both
// screens say who decided; the audit names the operator and the key.
func TestTwoOperatorsFirstDecisionWins(t *testing.T) {
	ana, bob := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "bob")
	r := newRig(t, ana, bob)
	sa, sb := r.attach(ana), r.attach(bob)
	sa.WaitFor("agent-one")
	sb.WaitFor("agent-one")

	ch := ask(r.eng, nav("https://alpha.test"))
	rev := focused(t, r.eng)
	sa.WaitFor("alpha.test")
	sb.WaitFor("alpha.test")
	// The key-ahead guard counts from when the review reached this
	// screen (no later than the WaitFor above), not from the engine's
	// ShownAt: a screen drawn late under load would refuse the key.
	time.Sleep(2 * testDelay)

	sa.Send("d")
	var ce *errcode.Error
	if err := waitResult(t, ch); !errors.As(err, &ce) || ce.Code != errcode.UserDenied {
		t.Fatalf("Ask after ana's d: %v", err)
	}
	sa.WaitFor("denied by ana")
	sb.WaitFor("denied by ana")
	// bob's a, after ana's d reached his screen, finds nothing to approve.
	sb.Send("a")
	sb.WaitFor("no review on screen")

	decisions := r.mem.Kind(audit.KindDecision)
	if len(decisions) != 1 {
		t.Fatalf("decisions %+v", decisions)
	}
	d := decisions[0]
	if d.Decision != "denied" || d.Operator != "ana" || d.KeyFingerprint != ana.Fingerprint() || d.Review != rev.ID {
		t.Fatalf("decision record %+v (ana's key %s)", d, ana.Fingerprint())
	}
	if st := r.eng.Snapshot(); len(st.Queue) != 0 {
		t.Fatalf("queue %+v", st.Queue)
	}
}

// A key that is not in the file never gets a session.
func TestUnknownKeyRefused(t *testing.T) {
	ana, eve := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "eve")
	r := newRig(t, ana)
	c, err := r.dial(eve)
	if err == nil {
		c.Close()
		t.Fatal("a key not in the authorized keys file signed in")
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("dial: %v", err)
	}
	if n := r.srv.Attached(); n != 0 {
		t.Fatalf("%d screens attached", n)
	}
}

// A session without a PTY is refused with a message and exit status 1.
func TestNoPTYRefused(t *testing.T) {
	ana := sshtest.NewKey(t, "ana")
	r := newRig(t, ana)
	c, err := r.dial(ana)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	sess.Stderr = &stderr
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	err = sess.Wait()
	var ee *gossh.ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 1 {
		t.Fatalf("no-PTY session ended with %v", err)
	}
	if !strings.Contains(stderr.String(), "needs a terminal") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

// An SSH screen of a headless console says there is no window to use in
// its take-over banner, as the console's own screen does.
func TestHeadlessConsolesBannerOnAnSSHScreen(t *testing.T) {
	ana := sshtest.NewKey(t, "ana")
	r := newRigWith(t, func(c *Config, _ *consent.Config) {
		c.Page, c.Headless = newBluePage(), true
	}, ana)
	s := r.attach(ana)
	s.WaitFor("agent-one")
	if err := r.eng.HandOff("c1"); err != nil {
		t.Fatal(err)
	}
	s.WaitFor("PAUSED")
	s.WaitUntil("the headless banner", func(text, _ string) bool {
		return strings.Contains(text, "This Chromium is headless")
	})
	if strings.Contains(strings.Join(strings.Fields(s.Text()), " "), "Chromium window if there is one") {
		t.Errorf("a headless console's SSH screen points at a window:\n%s", s.Text())
	}
}
