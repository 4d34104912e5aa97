package sshconsole

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// A take-over names its operator on every screen; another operator
// resumes only with a second, explicit r, and the audit says so.
func TestTakeOverNamedResumeByAnotherNeedsSecondR(t *testing.T) {
	ana, bob := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "bob")
	r := newRig(t, ana, bob)
	sa, sb := r.attach(ana), r.attach(bob)
	sa.WaitFor("agent-one")
	sb.WaitFor("agent-one")

	sa.Send("t")
	sb.WaitFor("by ana: ana has the browser")
	sa.WaitFor("take-over by ana")
	sb.Send("r")
	sb.WaitFor("press r again to resume as bob")
	if !r.eng.Paused("c1") {
		t.Fatal("one r from another operator resumed the conversation")
	}
	sb.Send("r")
	sa.WaitFor("resumed by bob (taken over by ana)")
	if r.eng.Paused("c1") {
		t.Fatal("the second r did not resume")
	}
	to, re := r.mem.Kind(audit.KindTakeOver), r.mem.Kind(audit.KindResume)
	if len(to) != 1 || to[0].Operator != "ana" || to[0].KeyFingerprint != ana.Fingerprint() {
		t.Fatalf("take-over records %+v", to)
	}
	if len(re) != 1 || re[0].Operator != "bob" || re[0].KeyFingerprint != bob.Fingerprint() || re[0].Note != "taken over by ana" {
		t.Fatalf("resume records %+v", re)
	}
}

// Moving an SSH screen's selection moves neither the engine's (the local
// screen's and the browser's front tab) nor another screen's.
func TestSelectionIsPerScreen(t *testing.T) {
	ana, bob := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "bob")
	r := newRig(t, ana, bob)
	r.eng.AddConversation("c2", "agent-two")
	r.eng.PutTab(consent.TabInfo{ID: "t2", Conversation: "c2", URL: "about:blank"})
	sa, sb := r.attach(ana), r.attach(bob)
	sa.WaitFor("agent-two")
	sb.WaitFor("agent-two")
	sb.Send("\t")
	sb.WaitFor("▸ agent-two")
	if sel := r.eng.Snapshot().Selection; sel != (consent.Selection{Conversation: "c1", Tab: "t1"}) {
		t.Fatalf("bob's tab moved the engine's selection to %+v", sel)
	}
	sa.WaitFor("▸ agent-one")
}

// A session without input is signed out after the idle time.
func TestIdleSessionSignedOut(t *testing.T) {
	ana := sshtest.NewKey(t, "ana")
	r := newRigWith(t, func(c *Config, _ *consent.Config) { c.IdleTimeout = 400 * time.Millisecond }, ana)
	s := r.attach(ana)
	s.WaitFor("agent-one")
	select {
	case <-s.Done():
	case <-time.After(waitLimit):
		t.Fatal("an idle session was never signed out")
	}
	deadline := time.Now().Add(waitLimit)
	for r.srv.Attached() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d screens still attached", r.srv.Attached())
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitPresence(t, r, ana, "ssh screen: joined", "ssh screen: signed out after 400ms without input")
}

// Without a keys file the console does not listen; the host key is made
// 0600 where it was asked for, never in the working directory.
func TestStartNeedsKeysAndMakesPrivateHostKey(t *testing.T) {
	if _, err := Start(t.Context(), nil, Config{Addr: "127.0.0.1:0"}); err != ErrNoKeysFile {
		t.Fatalf("start without keys: %v", err)
	}
	ana := sshtest.NewKey(t, "ana")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(ana.Line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	wd, _ := os.Getwd()
	srv, err := Start(t.Context(), nil, Config{Addr: "127.0.0.1:0", AuthorizedKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fi, err := os.Stat(filepath.Join(dir, "data", "tabwarden", HostKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("host key mode %04o", fi.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(wd, HostKeyFile)); err == nil {
		t.Fatal("a host key was written to the working directory")
	}
	// A host key others can read is refused.
	if err := os.Chmod(filepath.Join(dir, "data", "tabwarden", HostKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(t.Context(), nil, Config{Addr: "127.0.0.1:0", AuthorizedKeys: keys}); err == nil {
		t.Fatal("started with a world-readable host key")
	}
}

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		":2222":          "127.0.0.1:2222",
		"127.0.0.1:2222": "127.0.0.1:2222",
		"0.0.0.0:2222":   "0.0.0.0:2222",
		"[::1]:2222":     "[::1]:2222",
	} {
		if got, err := ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "2222", "host:"} {
		if _, err := ListenAddr(bad); err == nil {
			t.Errorf("ListenAddr(%q) accepted", bad)
		}
	}
}

// q on an SSH screen ends that session only: nothing is cancelled and the
// console's conversations carry on.
func TestQuitLeavesOnlyTheSession(t *testing.T) {
	ana := sshtest.NewKey(t, "ana")
	r := newRig(t, ana)
	s := r.attach(ana)
	s.WaitFor("agent-one")
	ch := ask(r.eng, nav("https://alpha.test"))
	s.WaitFor("alpha.test")
	s.Send("q")
	select {
	case <-s.Done():
	case <-time.After(waitLimit):
		t.Fatal("q did not end the SSH session")
	}
	if c := r.mem.Kind(audit.KindCancel); len(c) != 0 {
		t.Fatalf("q on an SSH screen cancelled: %+v", c)
	}
	select {
	case err := <-ch:
		t.Fatalf("the review ended with the session: %v", err)
	default:
	}
	if st := r.eng.Snapshot(); st.Focused == nil || len(st.Conversations) != 1 {
		t.Fatalf("state after an operator left: %+v", st)
	}
	waitPresence(t, r, ana, "ssh screen: joined", "ssh screen: left")
}

// waitPresence waits for the session records of k's screen, in order,
// and the activity lines every screen shows for them (issue 25 §4).
func waitPresence(t *testing.T, r *rig, k sshtest.Key, notes ...string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var got []string
		for _, rec := range r.mem.Kind(audit.KindSession) {
			if rec.Operator == k.Name && rec.KeyFingerprint == k.Fingerprint() {
				got = append(got, rec.Note)
			}
		}
		if len(got) == len(notes) {
			for i, n := range notes {
				if !strings.HasPrefix(got[i], n) {
					t.Fatalf("session records %q, want %q", got, notes)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session records %q, want %q", got, notes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var lines []string
	for _, a := range r.eng.Snapshot().Activity {
		if strings.HasPrefix(a.Text, "operator "+k.Name+" ") {
			lines = append(lines, a.Text)
		}
	}
	if len(lines) != len(notes) || lines[0] != "operator "+k.Name+" joined over SSH" {
		t.Fatalf("activity about %s: %q", k.Name, lines)
	}
}

// An a pressed as the review reaches a screen is ignored there and says
// so; the review stays pending.
func TestKeyAheadGuardOnSSHScreen(t *testing.T) {
	ana := sshtest.NewKey(t, "ana")
	// A long guard, so a loaded machine cannot let the early a through.
	r := newRigWith(t, func(_ *Config, e *consent.Config) { e.ReviewDelay = 3 * time.Second }, ana)
	s := r.attach(ana)
	s.WaitFor("agent-one")
	ch := ask(r.eng, nav("https://alpha.test"))
	s.WaitFor("alpha.test")
	s.Send("a")
	s.WaitFor("key ignored: review just appeared")
	s.WaitFor("ana pressed a") // the activity log, every screen's, says whose key
	if d := r.mem.Kind(audit.KindDecision); len(d) != 0 {
		t.Fatalf("an early a decided: %+v", d)
	}
	if k := r.mem.Kind(audit.KindKeyIgnored); len(k) != 1 || k[0].Operator != "ana" {
		t.Fatalf("key ignored records %+v", k)
	}
	select {
	case err := <-ch:
		t.Fatalf("Ask returned %v after an early a", err)
	default:
	}
}
