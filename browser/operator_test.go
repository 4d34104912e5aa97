package browser

import (
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// The operator verbs are the person's hands during a take-over only: before
// it they refuse and nothing reaches the site; during it the typed sign-in
// and the address-bar load reach the site without a review, and policy
// still blocks an origin outside it.
func TestOperatorVerbsOnlyDuringTakeOver(t *testing.T) {
	a, c := fixturetest.Start(t), fixturetest.Start(t)
	eng, br, tab := engineTab(t, a.URL)
	ctx := testCtx(t)
	navigateApproved(t, eng, br, tab, a.URL+"/signin.html", a.URL)
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
	err := br.OperatorOpen(ctx, conv, tab, c.URL+"/session")
	if n := c.Total(); n != 0 {
		t.Fatalf("a policy-blocked origin was reached by the operator verb (err %v): %+v", err, c.Requests())
	}
	if err == nil {
		t.Fatal("OperatorOpen to a policy-blocked origin reported success")
	}
}
