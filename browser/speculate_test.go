package browser

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/policy"
)

// Speculative loads (design.md §8: everything Chromium fetches on a page's
// behalf is a request like any other). Each case first shows, in a bare
// Chromium with only the mandated flags, that the page makes Chromium
// fetch b's document; then the same page in a task tab, with and without
// a policy that excludes b: b hears nothing, and a click on the page's
// link to b still asks (or, under the policy, is blocked) with nothing of
// b shown first.
//
// Both origins on 127.0.0.1 (different ports) are same-site; b as
// localhost is cross-site, which Chromium treats differently for both
// prefetch and prerender.

func TestSpeculationRulesPrerender(t *testing.T) { speculationCases(t, "prerender") }
func TestSpeculationRulesPrefetch(t *testing.T)  { speculationCases(t, "prefetch") }
func TestLinkRelPrefetch(t *testing.T)           { speculationCases(t, "link-prefetch") }

func speculationCases(t *testing.T, how string) {
	for _, site := range []string{"same-site", "cross-site"} {
		t.Run(site, func(t *testing.T) {
			needChromium(t)
			a, b := fixturetest.Start(t), fixturetest.Start(t)
			bOrigin := b.URL
			if site == "cross-site" {
				u, _ := url.Parse(b.URL)
				bOrigin = "http://localhost:" + u.Port()
			}
			page := a.URL + "/speculate.html?how=" + how + "&to=" + url.QueryEscape(bOrigin+"/session")

			live := bareSpeculation(t, page, b)
			t.Logf("%s %s: bare Chromium sent %d request(s) to b", how, site, live)
			for _, restricted := range []bool{false, true} {
				before := b.Total()
				var pol *policy.Policy
				if restricted {
					var err error
					pol, err = policy.Parse("org.json", fmt.Appendf(nil, `{"execution":{"browserOrigins":[%q]}}`, a.URL))
					if err != nil {
						t.Fatal(err)
					}
				}
				e := launch(t, func(o *Options) { o.Policy = pol })
				tab := e.newTab(t)
				settled := watchSpeculation(t, e, tab, how, a, bOrigin+"/session")
				e.open(t, tab, a.URL, page)
				<-settled
				if n := b.Total() - before; n != 0 {
					t.Fatalf("policy=%v: %d request(s) reached b: %+v", restricted, n, b.Requests()[before:])
				}

				e.click(t, tab, 50, 50)
				if restricted {
					e.waitURL(t, tab, "about:blank")
					e.gate.noAsk(t)
				} else {
					p := e.gate.expectAsk(t, bOrigin)
					e.gate.mu.Lock()
					shown := e.gate.tabs[tab].URL
					e.gate.mu.Unlock()
					if n := b.Total() - before; n != 0 || shown != page {
						t.Fatalf("at b's review: %d request(s) reached b, tab shows %s", n, shown)
					}
					p.reply <- nil
					if _, err := b.WaitPath(testCtx(t), "/session"); err != nil {
						t.Fatal(err)
					}
					e.waitURL(t, tab, bOrigin+"/session")
				}
				if restricted && b.Total() != before {
					t.Fatalf("policy: %d request(s) reached b after the click", b.Total()-before)
				}
				if err := e.b.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// bareSpeculation loads page in a Chromium launched without tabwarden
// (the mandated flags only) and waits until b has heard Chromium's
// speculative request, returning how many requests b received. A case
// that is not live here tests nothing, so not hearing it fails the test.
func bareSpeculation(t *testing.T, page string, b *fixture.Server) int {
	t.Helper()
	bin, err := FindChromium("")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--disable-background-networking", "--disable-component-update", "--no-first-run",
		"--headless=new", "--remote-debugging-port=0",
		"--user-data-dir=" + filepath.Join(t.TempDir(), "bare"),
	}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	proc, ws, err := start(testCtx(t), bin, append(args, "about:blank"))
	if err != nil {
		t.Fatal(err)
	}
	defer proc.stop(0)
	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	br := rod.New().ControlURL(ws).Context(ctx)
	if err := br.Connect(); err != nil {
		t.Fatal(err)
	}
	if _, err := (proto.TargetCreateTarget{URL: page}).Call(br); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitPath(ctx, "/session"); err != nil {
		t.Fatalf("not live: bare Chromium never fetched b: %v", err)
	}
	return b.Total()
}

// watchSpeculation returns a channel closed once Chromium has settled the
// page's speculation about target: for speculation rules, the Preload
// domain's final status of the attempt (what Chromium itself says it did);
// for <link rel=prefetch>, the page's report of the link's load or error
// event to its own server a.
func watchSpeculation(t *testing.T, e *env, tab consent.TabID, how string, a *fixture.Server, target string) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Second)
	if how == "link-prefetch" {
		go func() {
			defer close(done)
			defer cancel()
			_, err := a.WaitFor(ctx, func(r fixture.Request) bool { return strings.HasPrefix(r.Query, "kind=link-") })
			if err != nil {
				t.Error("the page never reported its prefetch's end")
			}
		}()
		return done
	}
	c := tabClient(t, e.b, tab)
	events := e.b.rod().Context(ctx).Event()
	if err := (proto.PreloadEnable{}).Call(c); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		defer cancel()
		for msg := range events {
			if msg.SessionID != c.sid {
				continue
			}
			var status proto.PreloadPreloadingStatus
			var url, why string
			switch {
			case how == "prefetch" && msg.Method == "Preload.prefetchStatusUpdated":
				ev := &proto.PreloadPrefetchStatusUpdated{}
				if !msg.Load(ev) {
					continue
				}
				status, url, why = ev.Status, ev.PrefetchURL, string(ev.PrefetchStatus)
			case how == "prerender" && msg.Method == "Preload.prerenderStatusUpdated":
				ev := &proto.PreloadPrerenderStatusUpdated{}
				if !msg.Load(ev) {
					continue
				}
				status, url, why = ev.Status, ev.Key.URL, string(ev.PrerenderStatus)
			default:
				continue
			}
			if url != target {
				continue
			}
			switch status {
			case proto.PreloadPreloadingStatusFailure, proto.PreloadPreloadingStatusReady, proto.PreloadPreloadingStatusSuccess:
				t.Logf("Chromium's %s of %s: %s %s", how, url, status, why)
				return
			}
		}
		t.Errorf("Chromium never settled its %s of %s", how, target)
	}()
	return done
}
