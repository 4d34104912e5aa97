// Package corpus_test is tabwarden's adversarial corpus (issue 10): pages
// and site tools that try every way we know to reach an origin nobody
// approved, to get around managed policy, to push data out under
// blockBrowserUploads, to write control sequences to the operator's
// terminal, or to leak a site-tool result the operator did not share.
//
// Every case runs twice. First in bare Chromium (launched directly with
// design.md §3's flags, no request hook, no consent engine): there the attack
// must work, or the case tests nothing and fails. Then through tabwarden
// (agent.Dispatcher, the consent engine, browser.Launch with the corpus
// policy, an operator who approves only origin A): there the witness must
// count zero. Witnesses are the corpus servers' own counters (by origin,
// by case tag), never a return value.
package corpus_test

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
)

// tally is the per-family summary the test log prints.
type tally struct {
	mu   sync.Mutex
	fams map[string]*famTally
}

type famTally struct{ cases, live, zero int }

func (t *tally) add(family string, live, zero bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fams == nil {
		t.fams = map[string]*famTally{}
	}
	f := t.fams[family]
	if f == nil {
		f = &famTally{}
		t.fams[family] = f
	}
	f.cases++
	if live {
		f.live++
	}
	if zero {
		f.zero++
	}
}

func (t *tally) log(tb testing.TB) (cases, live, zero int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for n := range t.fams {
		names = append(names, n)
	}
	sort.Strings(names)
	tb.Logf("%-14s %5s %13s %20s", "family", "cases", "live in bare", "zero with tabwarden")
	for _, n := range names {
		f := t.fams[n]
		tb.Logf("%-14s %5d %13d %20d", n, f.cases, f.live, f.zero)
		cases += f.cases
		live += f.live
		zero += f.zero
	}
	tb.Logf("%-14s %5d %13d %20d", "total", cases, live, zero)
	return cases, live, zero
}

// minCases is issue 10's floor for the corpus.
const minCases = 40

func TestCorpus(t *testing.T) {
	w := getWorld(t)
	var sum tally
	t.Cleanup(func() {
		cases, _, _ := sum.log(t)
		// A -run that picks some cases runs fewer; the whole corpus (as CI
		// runs it) must have its floor.
		if f := flag.Lookup("test.run"); !wallAlone && f != nil && (f.Value.String() == "" || f.Value.String() == "TestCorpus") && cases < minCases {
			t.Errorf("the corpus ran %d cases, want at least %d", cases, minCases)
		}
	})
	var wall []customCase
	var custom []customCase
	for _, c := range customCases() {
		if c.wall {
			wall = append(wall, c)
		} else if !wallAlone {
			custom = append(custom, c)
		}
	}
	// The wall families first, in a Chromium that has done nothing else
	// yet: Background Fetch stops starting after the rest of the corpus
	// has run in the same bare browser. Each counts on witnesses of its
	// own, so most run side by side; the group ends when the last has.
	t.Run("wall", func(t *testing.T) {
		for _, c := range wall {
			t.Run(c.family+"/"+c.name, func(t *testing.T) {
				if c.parallel {
					t.Parallel()
				}
				live, zero := c.run(t, w)
				sum.add(c.family, live, zero)
			})
		}
	})
	for _, c := range netCases {
		if wallAlone && c.witness == witnessN {
			continue // navigation consent: the hook's, not the wall's
		}
		t.Run(c.family+"/"+c.name, func(t *testing.T) {
			live, zero := runNetCase(t, w, c)
			sum.add(c.family, live, zero)
		})
	}
	for _, c := range custom {
		t.Run(c.family+"/"+c.name, func(t *testing.T) {
			live, zero := c.run(t, w)
			sum.add(c.family, live, zero)
		})
	}
	// Untagged requests count too: nothing at all of tabwarden's reached N
	// or P over the whole corpus (a favicon, a late speculative fetch).
	t.Run("no_request_reached_N_or_P", func(t *testing.T) {
		for _, s := range []*server{w.N, w.P} {
			if n := s.total(); n != 0 {
				t.Errorf("%d requests reached %s from tabwarden: %v", n, s.URL, s.list(func(hit) bool { return true }))
			}
		}
		// The wall dials nothing it refused: not even a connection (a
		// preconnect, FedCM's) reached P.
		if n := w.P.acceptCount(); n != 0 {
			t.Errorf("%d TCP connections reached %s from tabwarden", n, w.P.URL)
		}
	})
}

// matcher is what the case's witness counts on one side.
func (w *world) matcher(c netCase, side string) (*server, func(hit) bool) {
	tag := c.name + "-" + side
	switch c.witness {
	case witnessN:
		if side == sideBare {
			return w.N0, func(h hit) bool { return h.Tag == tag }
		}
		return w.N, func(h hit) bool { return h.Tag == tag }
	case witnessP:
		if side == sideBare {
			return w.P0, func(h hit) bool { return h.Tag == tag }
		}
		return w.P, func(h hit) bool { return h.Tag == tag }
	}
	return w.A, func(h hit) bool {
		return h.Tag == tag && strings.HasPrefix(h.Path, "/w/") && (h.BodyLen > 0 || h.WSMsg)
	}
}

func entryURL(w *world, c netCase, side string) string {
	entry := c.entry
	if entry == "" {
		entry = "index.html"
	}
	return w.A.URL + "/c/" + c.name + "/" + side + "/" + entry
}

// pageHit matches the requests for the case's own files on A.
func pageHit(name, side string) func(hit) bool {
	prefix := "/c/" + name + "/" + side + "/"
	return func(h hit) bool { return strings.HasPrefix(h.Path, prefix) }
}

// bareTimeout bounds the wait for bare Chromium's request.
const bareTimeout = 20 * time.Second

// runNetCase shows the case live in bare Chromium and runs it through
// tabwarden at the same time (the two share nothing: each side has its
// own tag and its own N and P), then asserts tabwarden's witness counted
// nothing.
func runNetCase(t *testing.T, w *world, c netCase) (live, zero bool) {
	var bareTook time.Duration
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		bareTook = runBare(t, w, c, &live)
	}()
	// However the tabwarden side ends (t.Fatalf included), the bare side
	// is over before the subtest is.
	defer func() { <-finished }()
	zero = runTW(t, w, c, func() time.Duration { <-finished; return bareTook })
	return live, zero
}

// runBare opens the case in bare Chromium and waits for its witnessed
// request. It returns how long the page took from its first request
// reaching A to the witnessed one.
func runBare(t *testing.T, w *world, c netCase, live *bool) time.Duration {
	srv, match := w.matcher(c, sideBare)
	ctx, cancel := context.WithTimeout(context.Background(), bareTimeout)
	defer cancel()
	start := time.Now()
	p, err := w.bare.Open(ctx, entryURL(w, c, sideBare))
	if err != nil {
		t.Errorf("NOT LIVE: bare Chromium: open: %v", err)
		return bareTimeout
	}
	defer func() { _ = p.Close() }()
	if c.click != "" {
		// Click until the page (once loaded) makes its request.
		clickCtx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			for clickCtx.Err() == nil {
				_ = p.Click(clickCtx, 200, 200)
				select {
				case <-time.After(250 * time.Millisecond):
				case <-clickCtx.Done():
				}
			}
		}()
	}
	*live = srv.wait(ctx, match)
	took := time.Since(start)
	if t0, t1 := w.A.first(pageHit(c.name, sideBare)), srv.first(match); !t0.IsZero() && !t1.IsZero() {
		took = t1.Sub(t0)
	}
	if !*live {
		t.Errorf("NOT LIVE: bare Chromium made no request the witness (%s) counts in %v: the case tests nothing", c.witness, bareTimeout)
	}
	return took
}

// runTW runs the case through tabwarden. It ends on the first signal (the
// witness counted, the page said done, a review for another origin came
// up, the page's load event) or after quietMax without one, and in any
// case not before twice as long as bare Chromium took to make its request
// (plus half a second, at least a second) has passed since the page's
// load (or, without one, its first request reaching A), so a request that
// comes late is still counted.
func runTW(t *testing.T, w *world, c netCase, bareDone func() time.Duration) bool {
	srv, match := w.matcher(c, sideTW)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := w.newRun(t, ctx, c.name)
	defer r.close()
	tag := c.name + "-" + sideTW

	start := time.Now()
	var tab string
	var res agent.Result
	if c.via != "" {
		tab = r.open(w.expand(c.name, sideTW, c.via))
		res = r.call("browser_navigate", map[string]any{"tabId": tab, "url": entryURL(w, c, sideTW)})
	} else {
		res = r.call("browser_open", map[string]any{"url": entryURL(w, c, sideTW)})
		if !res.IsError {
			tab, _ = res.Object["tabId"].(string)
		}
	}
	if c.click != "" {
		if tab == "" {
			t.Fatalf("browser_open failed: %s", res.JSON())
		}
		r.clickGo(tab, c.click)
	}

	signal := func() bool {
		if srv.count(match) > 0 || w.A.count(func(h hit) bool { return h.Tag == tag && strings.HasPrefix(h.Path, "/done/") }) > 0 {
			return true
		}
		for _, rv := range w.op.reviews(r.conv) {
			if !w.op.approves(rv.Origin) {
				return true
			}
		}
		return false
	}
	changes, unsub := w.eng.Changes()
	defer unsub()
	opened := time.Since(start)
	quiet := time.NewTimer(quietMax)
	defer quiet.Stop()
wait:
	for !signal() {
		select {
		case <-changes:
		case <-srv.changes():
		case <-w.A.changes():
		case <-quiet.C:
			break wait
		case <-ctx.Done():
			t.Fatalf("tabwarden side: %v", ctx.Err())
		}
	}
	signalled := time.Since(start)
	bareTook := bareDone()
	from := start
	if t0 := w.A.first(pageHit(c.name, sideTW)); !t0.IsZero() {
		from = t0
	}
	if t1 := w.A.first(func(h hit) bool { return h.Path == "/done/"+tag+"/load" }); t1.After(from) {
		from = t1
	}
	if rest := max(2*bareTook+500*time.Millisecond, time.Second) - time.Since(from); rest > 0 {
		time.Sleep(rest)
	}
	got := srv.list(match)
	if len(got) != 0 {
		t.Errorf("BYPASS: %d requests reached the %s witness through tabwarden: %v", len(got), c.witness, got)
	}
	if c.via != "" && w.B.count(func(h hit) bool { return h.Tag == tag && strings.HasSuffix(h.Path, "/frame.html") }) == 0 {
		// B is granted in the tab: its frame loads, or the case shows
		// nothing about the frame nested in it.
		t.Errorf("the frame of the granted origin never reached B")
	}
	var asked []string
	for _, rv := range w.op.reviews(r.conv) {
		if !w.op.approves(rv.Origin) {
			asked = append(asked, fmt.Sprintf("%s %s (denied)", rv.Kind, rv.Origin))
		}
	}
	t.Logf("bare: request after %v; tabwarden: %d witness hits; open %s after %v, signal after %v; reviews for other origins: %v",
		bareTook.Round(time.Millisecond), len(got), res.Code(), opened.Round(time.Millisecond), signalled.Round(time.Millisecond), asked)
	return len(got) == 0
}

// quietMax bounds the tabwarden side's wait for any signal when none
// comes (a request the hook drops silently gives none); after it, the
// side still waits twice as long as bare Chromium took.
const quietMax = time.Second

// customCase is a case with its own two sides (terminal, disclosure, the
// wall families).
type customCase struct {
	family, name string
	run          func(t *testing.T, w *world) (live, zero bool)
	// wall: a case of managed policy the wall must hold alone (it runs in
	// the tabwarden_nohook build too).
	wall bool
	// parallel: a wall case whose witnesses are its own, run side by side
	// with the others.
	parallel bool
}
