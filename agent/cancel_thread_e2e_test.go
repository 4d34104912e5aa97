package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// With the thread profile, x revokes the thread grant with navigation
// consent: the conversation's next browser_open waits for the operator and
// nothing reaches the site before the key (a newcomer walk saw the open
// load with no review after "navigation consent revoked"). The witness is
// the fixture server's own page count; without the fix in consent's Cancel
// the second open reaches it with no review.
func TestE2ECancelRevokesTheThreadGrant(t *testing.T) {
	stk := stacktest.Start(t, stacktest.Config{Engine: consent.Config{Profile: consent.ProfileThread}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conv := stk.Conversation(t, t.Name())
	site := stk.Site(t)
	op := stk.Operator(t, ctx)
	e := &e2e{t: t, ctx: ctx, stk: stk, eng: stk.Engine, br: stk.Browser, d: conv.Dispatcher, log: conv.Log, conv: conv.ID, site: site, op: op}

	p := e.start("browser_open", map[string]any{"url": site.URL + actPage})
	op.Approve(consent.KindThread, site.URL)
	wantOK(t, p.result())

	if err := stk.Engine.Cancel(conv.ID); err != nil {
		t.Fatal(err)
	}
	before := site.PageRequests()
	p = e.start("browser_open", map[string]any{"url": site.URL + actPage + "?after-x"})
	r := op.Await(consent.KindThread, site.URL)
	if n := site.PageRequests(); n != before {
		t.Fatalf("%d page requests reached the site after x, before the operator's key", n-before)
	}
	op.Decide(r, false)
	wantFail(t, p.result(), errcode.UserDenied, false)
	if n := site.PageRequests(); n != before {
		t.Fatalf("%d page requests reached the site after x and a denial", n-before)
	}
}
