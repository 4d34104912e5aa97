package browser

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

func TestPolicyOriginsStopEveryRequestToOtherServers(t *testing.T) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	pol, err := policy.Parse("org.json", fmt.Appendf(nil, `{"execution":{"browserOrigins":[%q]}}`, a.URL))
	if err != nil {
		t.Fatal(err)
	}
	e := launch(t, func(o *Options) { o.Policy = pol })
	tab := e.newTab(t)

	// A page of the approved origin reaches for b every way it can.
	e.open(t, tab, a.URL, a.URL+"/subresources.html?other="+url.QueryEscape(b.URL))
	// img, script, stylesheet, fetch, POST fetch and beacon come from the
	// main frame and are counted against the tab.
	e.gate.until(t, "six blocked sub-resources", func(g *fakeGate) bool {
		return g.tabs[tab].BlockedRequests >= 6
	})
	if _, err := a.WaitPath(testCtx(t), "/record"); err != nil {
		t.Fatal(err)
	}

	// Navigating there fails on policy before any review: no approval can
	// widen policy.
	err = e.b.Navigate(testCtx(t), conv, tab, b.URL+"/session")
	wantCode(t, err, errcode.WebsiteBlocked)
	if err.Error() != "website_blocked: "+policy.MsgWebsiteBlocked {
		t.Fatalf("message %q", err)
	}
	e.gate.noAsk(t)
	e.waitURL(t, tab, "about:blank")
	if n := b.Total(); n != 0 {
		t.Fatalf("%d requests reached the unapproved server: %+v", n, b.Requests())
	}
}

// One page tries every way to push data out, to its own server a and to
// another server b: POST, PUT and beacon to a, and two WebSockets (the
// page's and a worker's) to b. The WebSocket half rests on the
// connect-src policy the hook adds to the page's response
// (Network.setBlockedURLs does not stop handshakes in Chromium 156); both
// servers count what reached them.
func TestPolicyBlockedUploadsReachNoServer(t *testing.T) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	pol, err := policy.Parse("org.json", []byte(`{"execution":{"blockBrowserUploads":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := launch(t, func(o *Options) { o.Policy = pol })
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/uploads.html?other="+url.QueryEscape(b.URL))
	if _, err := a.WaitFor(testCtx(t), func(r fixture.Request) bool { return r.Query == "kind=done" }); err != nil {
		t.Fatal(err)
	}
	for _, r := range a.Requests() {
		if r.Method != "GET" || r.HasBody {
			t.Errorf("a %s with body=%v reached the server: %s?%s", r.Method, r.HasBody, r.Path, r.Query)
		}
		if strings.HasPrefix(r.Query, "kind=ws") {
			t.Errorf("a WebSocket handshake reached the page's own server: %+v", r)
		}
	}
	if n := b.Total(); n != 0 {
		t.Errorf("the WebSocket handshake reached the other server: %+v", b.Requests())
	}
	if e.b.Tabs(conv)[0].BlockedRequests < 3 {
		t.Fatalf("blocked count %d, want POST, PUT and beacon", e.b.Tabs(conv)[0].BlockedRequests)
	}
}
