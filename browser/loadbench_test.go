package browser

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/policy"
)

// What the page-load benchmarks (BenchmarkPageLoadHook, BenchmarkHookCost,
// BenchmarkFetchFloorPatterns) share: Chromiums with Launch's flags, with
// and without tabwarden, a timed load, a median.

// bareChromiumPage is an about:blank page of a Chromium of its own with
// Launch's flags and no tabwarden. patterns nil: no Fetch domain at all;
// otherwise a browser-level Fetch.enable of patterns whose every paused
// request is continued at once — Chromium's bare Fetch floor.
func bareChromiumPage(b *testing.B, ctx context.Context, name string, patterns []*proto.FetchRequestPattern) *rod.Page {
	b.Helper()
	opts := Options{Headless: true, ProfileDir: filepath.Join(b.TempDir(), name)}
	proc, wsURL, err := launchChromium(ctx, &opts, nil, nil) // no wall: the floor
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { proc.stop(cdpedge.Close) })
	// The same page setup as a Browser's: no emulated device.
	r := rod.New().Context(ctx).ControlURL(wsURL).NoDefaultDevice()
	if err := r.Connect(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	if patterns != nil {
		go r.EachEvent(func(e *proto.FetchRequestPaused) {
			go func() { _ = proto.FetchContinueRequest{RequestID: e.RequestID}.Call(r) }()
		})()
		if err := (proto.FetchEnable{Patterns: patterns}).Call(r); err != nil {
			b.Fatal(err)
		}
	}
	p, err := r.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// hookedPage is a task tab of a Browser (tabwarden's hook) under pol whose
// navigations to origins are already granted. covering: the gate says a
// grant covers the page, as consent.Engine does, so a granted document is
// continued in place rather than parked (see park).
func hookedPage(b *testing.B, ctx context.Context, name string, pol *policy.Policy, covering bool, origins ...string) (*Browser, *rod.Page) {
	b.Helper()
	return hookedPageBy(b, ctx, Launch, name, pol, covering, origins...)
}

// hookedPageNoWall is hookedPage on a Browser whose Chromium has no wall
// below it: the hook alone, to tell the wall's own cost.
func hookedPageNoWall(b *testing.B, ctx context.Context, name string, pol *policy.Policy, covering bool, origins ...string) (*Browser, *rod.Page) {
	b.Helper()
	return hookedPageBy(b, ctx, launchNoWall, name, pol, covering, origins...)
}

// launchNoWall is Launch without the wall (benchmarks only).
func launchNoWall(ctx context.Context, opts Options) (*Browser, error) {
	hold, err := startHold()
	if err != nil {
		return nil, err
	}
	proc, wsURL, err := launchChromium(ctx, &opts, nil, nil)
	if err != nil {
		hold.close()
		return nil, err
	}
	return open(ctx, opts, slog.New(slog.DiscardHandler), proc, wsURL, hold)
}

func hookedPageBy(b *testing.B, ctx context.Context, launch func(context.Context, Options) (*Browser, error), name string, pol *policy.Policy, covering bool, origins ...string) (*Browser, *rod.Page) {
	b.Helper()
	fg := newFakeGate()
	var g Gatekeeper = fg
	if covering {
		g = &coveringGate{fg}
	}
	br, err := launch(ctx, Options{Headless: true, ProfileDir: filepath.Join(b.TempDir(), name), Gate: g, Policy: pol, TabLimit: DefaultTabLimit})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close() })
	tab, err := br.NewTab(ctx, conv, false)
	if err != nil {
		b.Fatal(err)
	}
	fg.mu.Lock()
	for _, o := range origins {
		fg.grants[string(tab)+" "+o] = true
	}
	fg.mu.Unlock()
	p, err := br.Page(ctx, conv, tab)
	if err != nil {
		b.Fatal(err)
	}
	return br, p
}

// timedLoad navigates p to u and returns how long it took until the load
// event.
func timedLoad(b *testing.B, ctx context.Context, p *rod.Page, u string) time.Duration {
	b.Helper()
	p = p.Context(ctx)
	start := time.Now()
	wait := p.WaitNavigation(proto.PageLifecycleEventNameLoad)
	if err := p.Navigate(u); err != nil {
		b.Fatal(err)
	}
	wait()
	return time.Since(start)
}

// medianMS is the median of ds in milliseconds: one load a busy machine
// stalled must not move a ratio.
func medianMS(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}
