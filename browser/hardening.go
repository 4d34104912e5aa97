package browser

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
)

// preloadingGap is always a gap in attach mode: Chromium has no launch
// flag that turns speculation-rules prefetch and prerender off, only the
// profile setting Launch writes (disablePreloading), which the console
// cannot read in someone else's browser.
const preloadingGap = "preloading cannot be checked: speculation-rules prefetch and prerender bypass the request hook " +
	"unless the browser's profile turns them off (Preferences: net.network_prediction_options = 2)"

// hardeningGaps reads an attached browser's command line (argv, as
// Browser.getBrowserCommandLine gives it) against the launch flags and
// names, one line each, what the console cannot guarantee there.
// Chromium keeps the last of a repeated switch, so the last
// --disable-features and --enable-features are the ones that count.
func hardeningGaps(argv []string, readErr error) []string {
	if readErr != nil {
		return []string{
			"the browser's command line cannot be read (Chromium gives it only with --enable-automation): " +
				"background networking, component updates, the back/forward cache and WebMCP are unchecked",
			preloadingGap,
		}
	}
	has := map[string]bool{}
	last := map[string]string{}
	for _, a := range argv {
		name, value, _ := strings.Cut(a, "=")
		has[name] = true
		last[name] = value
	}
	feature := func(sw, f string) bool {
		for _, v := range strings.Split(last[sw], ",") {
			if strings.TrimSpace(v) == f {
				return true
			}
		}
		return false
	}
	var gaps []string
	if !has["--disable-background-networking"] {
		gaps = append(gaps, "background networking is on (no --disable-background-networking): Chromium may fetch on its own, outside the hook")
	}
	if !has["--disable-component-update"] {
		gaps = append(gaps, "component updates are on (no --disable-component-update)")
	}
	if !feature("--disable-features", "BackForwardCache") {
		gaps = append(gaps, "the back/forward cache is on (no --disable-features=BackForwardCache): going back can restore a page without a review")
	}
	if !feature("--enable-features", "WebMCP") {
		gaps = append(gaps, "native WebMCP is off (no --enable-features=WebMCP): site tools use the polyfill")
	}
	return append(gaps, preloadingGap)
}

// readHardening asks the browser behind r for its command line.
func readHardening(ctx context.Context, r *rod.Browser) []string {
	res, err := proto.BrowserGetBrowserCommandLine{}.Call(r.Context(ctx))
	if err != nil {
		return hardeningGaps(nil, err)
	}
	return hardeningGaps(res.Arguments, nil)
}

// Gaps is what the console cannot guarantee in an attached browser (none
// for a Chromium it launched), read at the last attach.
func (b *Browser) Gaps() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.gaps...)
}

// noteGaps reads c's hardening, keeps it for Gaps, and names each gap in
// the activity log (as a warning) and the log.
func (b *Browser) noteGaps(ctx context.Context, c *conn) {
	cctx, cancel := b.call(ctx)
	gaps := readHardening(cctx, c.rod)
	cancel()
	b.mu.Lock()
	b.gaps = gaps
	b.mu.Unlock()
	for _, g := range gaps {
		b.gate.Note("", "attached browser: "+g, true)
		b.log.Warn("attached browser cannot guarantee", "gap", g)
	}
}

// CheckAttached is doctor's look at an attached browser: it resolves and
// dials the endpoint (one short session), reads the command line, and
// returns the gaps; an error (scrubbed) when the endpoint cannot be
// reached.
func CheckAttached(ctx context.Context, rawURL, token string) ([]string, error) {
	opts := Options{BrowserURL: rawURL, BrowserToken: token}
	fail := func(err error) error {
		return unavailable("%s", scrub(&opts, fmt.Sprintf("the browser at %s: %v", ShownURL(rawURL), err)))
	}
	ctx, cancel := context.WithTimeout(ctx, opts.handshakeTimeout())
	defer cancel()
	wsURL, grid, err := resolveEndpoint(ctx, rawURL, authHeader(token))
	if err != nil {
		return nil, fail(err)
	}
	defer grid.delete()
	ws, res, err := dialCDP(ctx, wsURL, authHeader(token))
	if err != nil {
		if res.refused() {
			err = refusedWith(res.code, res.status)
		}
		return nil, fail(err)
	}
	defer ws.Close()
	r := rod.New().Client(cdp.New().Start(ws)).Context(ctx)
	cctx, ccancel := context.WithTimeout(ctx, cdpedge.Call)
	defer ccancel()
	return readHardening(cctx, r), nil
}
