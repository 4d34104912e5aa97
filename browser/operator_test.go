package browser

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// The operator verbs are the person's hands during a take-over only: before
// it they refuse and nothing reaches the site; during it the typed sign-in
// and the address-bar load reach the site without a review, and policy
// still blocks an origin outside it.
func TestOperatorVerbsOnlyDuringTakeOver(t *testing.T) {
	needChromium(t)
	a, c := fixturetest.Start(t), fixturetest.Start(t)
	pol, err := policy.Parse("org.json", fmt.Appendf(nil, `{"execution":{"browserOrigins":[%q]}}`, a.URL))
	if err != nil {
		t.Fatal(err)
	}
	eng := consent.New(consent.Config{ReviewDelay: time.Nanosecond})
	t.Cleanup(eng.Close)
	eng.AddConversation(conv, "agent")
	ctx := testCtx(t)
	br, err := Launch(ctx, Options{Headless: true, ProfileDir: filepath.Join(t.TempDir(), "p"), Gate: eng, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = br.Close() })
	tab, err := br.NewTab(ctx, conv, false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- br.Navigate(ctx, conv, tab, a.URL+"/signin.html") }()
	if err := eng.Decide(queued(t, eng, a.URL).ID, true); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fields := []FormField{{Name: "username", Text: "ada"}, {Name: "password", Text: "pw"}}

	wantCode(t, br.OperatorSubmitForm(ctx, conv, tab, fields), errcode.InvalidAction)
	wantCode(t, br.OperatorOpen(ctx, conv, tab, a.URL+"/session"), errcode.InvalidAction)
	time.Sleep(300 * time.Millisecond) // a request sent anyway would be counted by now
	if a.Count("/signin") != 0 || a.Count("/session") != 0 {
		t.Fatalf("an operator verb reached the site without a take-over: %+v", a.Requests())
	}

	if err := eng.TakeOver(conv); err != nil {
		t.Fatal(err)
	}
	if err := br.OperatorSubmitForm(ctx, conv, tab, fields); err != nil {
		t.Fatal(err)
	}
	// The form's POST answers 303 to /session.
	if _, err := a.WaitPath(ctx, "/session"); err != nil {
		t.Fatal(err)
	}
	if a.Count("/signin") != 1 {
		t.Fatalf("the typed sign-in was not posted once: %+v", a.Requests())
	}
	if err := br.OperatorOpen(ctx, conv, tab, a.URL+"/record"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPath(ctx, "/record"); err != nil {
		t.Fatal(err)
	}
	if q := eng.Snapshot().Queue; len(q) != 0 {
		t.Fatalf("the operator's requests were put up for review: %+v", q)
	}
	err = br.OperatorOpen(ctx, conv, tab, c.URL+"/session")
	if n := c.Total(); n != 0 {
		t.Fatalf("a policy-blocked origin was reached by the operator verb (err %v): %+v", err, c.Requests())
	}
	if err == nil {
		t.Fatal("OperatorOpen to a policy-blocked origin reported success")
	}
}
