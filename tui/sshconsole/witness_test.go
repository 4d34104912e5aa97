package sshconsole

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// gatedSubmit is the scripted agent step: a click that posts to the
// fixture, dispatched only once the engine's Ask allows it (as the
// browser layer does).
func gatedSubmit(e *consent.Engine, site *fixture.Server) <-chan error {
	ch := make(chan error, 1)
	go func() {
		req := consent.Request{Gate: consent.GateAction, Conversation: "c1", Tab: "t1", Origin: site.Origin(),
			Action: &consent.Action{Type: consent.ActionClick, Ref: "e1", Name: "Submit"}}
		if err := e.Ask(context.Background(), req); err != nil {
			ch <- err
			return
		}
		post, err := http.NewRequestWithContext(context.Background(), http.MethodPost, site.URL+"/submit", nil)
		if err != nil {
			ch <- err
			return
		}
		post.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(post)
		if err == nil {
			resp.Body.Close()
		}
		ch <- err
	}()
	return ch
}

// A review answered over SSH gives the same witness counts as one answered
// at the console's own terminal: nothing reaches the site before the key
// press, one request after it.
func TestSSHAnswerWitnessMatchesLocal(t *testing.T) {
	counts := map[string][2]int{}
	for _, where := range []string{"local", "ssh"} {
		ana := sshtest.NewKey(t, "ana")
		r := newRig(t, ana)
		site := fixturetest.Start(t)
		var s *screen
		if where == "ssh" {
			s = r.attach(ana)
			s.WaitFor("agent-one")
		}
		ch := gatedSubmit(r.eng, site)
		rev := focused(t, r.eng)
		if s != nil {
			s.WaitFor("Submit")
		}
		// The key-ahead guard counts from when the review reached this
		// screen (no later than the WaitFor above), not from the engine's
		// ShownAt: a screen drawn late under load would refuse the key.
		time.Sleep(3 * testDelay)
		before := site.Count("/submit")
		if where == "ssh" {
			s.Send("a")
		} else if err := r.eng.Decide(rev.ID, true); err != nil {
			t.Fatal(err)
		}
		if err := waitResult(t, ch); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		counts[where] = [2]int{before, site.Count("/submit")}
	}
	if counts["ssh"] != counts["local"] || counts["ssh"] != [2]int{0, 1} {
		t.Fatalf("witness counts (before, after the key press): %v", counts)
	}
}
