package browser

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rod/rod"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
)

// BenchmarkHookCost measures the request hook against the two floors of
// issue 12 item 7, from one run, on four Chromiums with the same flags
// (navigation already granted, no managed policy):
//
//   - off: a plain rod connection, no Fetch domain;
//   - floor: a plain rod connection with a browser-level Fetch.enable of
//     the hook's own patterns whose every paused request is continued at
//     once, with no tabwarden logic — Chromium's bare Fetch floor;
//   - hook: a Browser (the hook of hook.go, and the network wall below
//     its Chromium, as shipped) whose gate, like the engine, says a grant
//     covers the page, so its document is not parked;
//   - nowall: the same Browser with no wall (the hook alone), so the
//     wall's own share is printed too.
//
// Two pages: bench.html of the fixture (200 same-origin images served at
// once) and slow.html of a local server whose 200 images each take 20 ms
// to serve. Reported, as medians per load: the hook beside Chromium's bare
// Fetch floor on both pages (issue 24 item 6: fast-hook/floor and
// slow-hook/floor ≤ 1.05; these replace issue 12's slow-hook/off ≤ 1.10,
// which sat below Chromium's own cost of the Fetch domain); the other
// pairings are printed too. Loads of one iteration alternate
// modes so machine load falls on all alike. Use -benchtime 10x or more.
func BenchmarkHookCost(b *testing.B) {
	if _, err := FindChromium(""); err != nil {
		b.Skipf("no Chromium: %v", err)
	}
	srv, err := fixture.New()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	slow := newSlowSite(b, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	hook, hookPage := hookedPage(b, ctx, "hook", nil, true, srv.URL, slow.URL)
	_, nowallPage := hookedPageNoWall(b, ctx, "nowall", nil, true, srv.URL, slow.URL)
	pages := map[string]*rod.Page{
		"hook":   hookPage,
		"nowall": nowallPage,
		"off":    bareChromiumPage(b, ctx, "off", nil),
		// The floor enables exactly what the hook enables.
		"floor": bareChromiumPage(b, ctx, "floor", hook.hookPatterns().Patterns),
	}
	load := func(mode, u string) time.Duration { return timedLoad(b, ctx, pages[mode], u) }
	modes := []string{"off", "floor", "hook", "nowall"}
	sites := map[string]string{"fast": srv.URL + "/bench.html", "slow": slow.URL + "/slow.html"}
	url := func(site, mode, run string) string {
		return fmt.Sprintf("%s?n=200&run=%s-%s", sites[site], mode, run)
	}
	for _, m := range modes { // first-load costs: renderer spawn, cache setup
		load(m, url("fast", m, "warm"))
		load(m, url("slow", m, "warm"))
	}
	took := map[string][]time.Duration{}
	i := 0
	for ; b.Loop(); i++ {
		for k := range modes {
			m := modes[(i+k)%len(modes)]
			for _, s := range []string{"fast", "slow"} {
				took[s+"-"+m] = append(took[s+"-"+m], load(m, url(s, m, fmt.Sprint(i))))
			}
		}
	}
	b.StopTimer()
	ms := func(k string) float64 { return medianMS(took[k]) }
	for _, s := range []string{"fast", "slow"} {
		for _, m := range modes {
			b.ReportMetric(ms(s+"-"+m), "ms/"+s+"-"+m)
		}
	}
	b.ReportMetric(ms("fast-hook")/ms("fast-floor"), "fast-hook/floor")
	b.ReportMetric(ms("fast-hook")/ms("fast-off"), "fast-hook/off")
	b.ReportMetric(ms("slow-hook")/ms("slow-off"), "slow-hook/off")
	b.ReportMetric(ms("slow-hook")/ms("slow-floor"), "slow-hook/floor")
	b.ReportMetric(ms("fast-hook")/ms("fast-nowall"), "fast-wall/nowall")
	b.ReportMetric(ms("slow-hook")/ms("slow-nowall"), "slow-wall/nowall")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d iterations; medians (ms): fast hook+wall %.1f floor %.1f off %.1f hook alone %.1f, hook+wall/floor %.3f (target ≤ 1.05), wall's share %.3f; "+
		"slow hook+wall %.1f floor %.1f off %.1f hook alone %.1f, hook+wall/floor %.3f (target ≤ 1.05), hook+wall/off %.3f",
		i, ms("fast-hook"), ms("fast-floor"), ms("fast-off"), ms("fast-nowall"), ms("fast-hook")/ms("fast-floor"), ms("fast-hook")/ms("fast-nowall"),
		ms("slow-hook"), ms("slow-floor"), ms("slow-off"), ms("slow-nowall"), ms("slow-hook")/ms("slow-floor"), ms("slow-hook")/ms("slow-off"))
	// Every load fetched all its images: nothing was cached or dropped.
	if want := 200 * len(modes) * (i + 1); srv.Count("/pixel.gif") < want || int(slow.images.Load()) < want {
		b.Fatalf("image requests at the servers: fast %d, slow %d, want ≥ %d each", srv.Count("/pixel.gif"), slow.images.Load(), want)
	}
}

// coveringGate is the fake gate that, like consent.Engine, says when a
// grant already answers a request, so a granted document is continued in
// place rather than parked in the hold server (see park).
type coveringGate struct{ *fakeGate }

func (g *coveringGate) Covered(req consent.Request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.grants[string(req.Tab)+" "+req.Origin]
}

// slowSite serves slow.html, bench.html's shape, whose images each take
// delay to answer: a page whose load time is the server's, not Chromium's.
type slowSite struct {
	*httptest.Server
	images atomic.Int64
}

const slowHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>200 slow sub-resources</title></head>
<body><div id="imgs"></div><script>
  var q = new URLSearchParams(location.search);
  var n = Number(q.get("n") || 200), run = q.get("run") || "0";
  var box = document.getElementById("imgs");
  for (var i = 0; i < n; i++) {
    var img = document.createElement("img");
    img.width = 1; img.height = 1;
    img.src = "/slow.gif?run=" + run + "&i=" + i;
    box.appendChild(img);
  }
</script></body></html>`

// gif1x1 is a transparent 1x1 GIF.
var gif1x1 = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

func newSlowSite(b *testing.B, delay time.Duration) *slowSite {
	s := &slowSite{}
	mux := http.NewServeMux()
	mux.HandleFunc("/slow.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(slowHTML))
	})
	mux.HandleFunc("/slow.gif", func(w http.ResponseWriter, r *http.Request) {
		s.images.Add(1)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "image/gif")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(gif1x1)
	})
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	s.Start()
	b.Cleanup(s.Close)
	return s
}
