package browser

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/policy"
)

// BenchmarkPageLoadHook measures what the request hook costs a page: the
// load of bench.html (200 same-origin images) on four Chromiums with the
// same flags, navigation already granted:
//
//   - off: a plain rod connection, no Fetch domain;
//   - hook: a Browser with no managed policy (only documents are paused);
//   - policy: a Browser under browserOrigins, so each of the 200 requests
//     is paused and judged;
//   - fetchonly: a plain rod connection with a browser-level Fetch for
//     documents that continues each at once — the floor any Fetch-based
//     hook pays, since with Fetch on Chromium routes every sub-resource
//     through its DevTools interceptor, paused or not.
//
// The four loads alternate within an iteration so machine load falls on
// all alike. Reported: the median ms per load of each and the ratios of
// the medians to off (target ≤ 1.15). Run it on an otherwise idle machine
// with -benchtime 20x or more: on two busy cores the ratios swing by
// ±0.2 from run to run.
func BenchmarkPageLoadHook(b *testing.B) {
	if _, err := FindChromium(""); err != nil {
		b.Skipf("no Chromium: %v", err)
	}
	srv, err := fixture.New()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	pol, err := policy.Parse("org.json", fmt.Appendf(nil, `{"execution":{"browserOrigins":[%q]}}`, srv.URL))
	if err != nil {
		b.Fatal(err)
	}
	pages := map[string]*rod.Page{
		"off":       bareChromiumPage(b, ctx, "off", nil),
		"fetchonly": bareChromiumPage(b, ctx, "fo", []*proto.FetchRequestPattern{{URLPattern: "*", ResourceType: proto.NetworkResourceTypeDocument}}),
	}
	_, pages["hook"] = hookedPage(b, ctx, "hook", nil, false, srv.URL)
	_, pages["policy"] = hookedPage(b, ctx, "policy", pol, false, srv.URL)
	load := func(mode, run string) time.Duration {
		return timedLoad(b, ctx, pages[mode], fmt.Sprintf("%s/bench.html?n=200&run=%s-%s", srv.URL, mode, run))
	}
	modes := []string{"off", "hook", "policy", "fetchonly"}
	for _, m := range modes { // first-load costs: renderer spawn, cache setup
		load(m, "warm")
	}
	took := map[string][]time.Duration{}
	i := 0
	for ; b.Loop(); i++ {
		for k := range modes {
			m := modes[(i+k)%len(modes)]
			took[m] = append(took[m], load(m, fmt.Sprint(i)))
		}
	}
	ms := func(m string) float64 { return medianMS(took[m]) }
	b.ReportMetric(ms("off"), "ms/load-off")
	b.ReportMetric(ms("hook"), "ms/load-hook")
	b.ReportMetric(ms("policy"), "ms/load-policy")
	b.ReportMetric(ms("hook")/ms("off"), "ratio-hook")
	b.ReportMetric(ms("fetchonly")/ms("off"), "ratio-fetchonly")
	b.ReportMetric(ms("policy")/ms("off"), "ratio-policy")
	if want := 200 * 4 * (i + 1); srv.Count("/pixel.gif") < want {
		b.Fatalf("only %d image requests reached the server, want ≥ %d", srv.Count("/pixel.gif"), want)
	}
}
