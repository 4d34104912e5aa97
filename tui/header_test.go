package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent"
)

// The header fits 60 (the page view's side column), 80, 100 and 120
// columns without cutting a word or a badge: lower-priority parts go
// whole, and what the operator must know stays — the consent profile, a
// headless browser or one without the network wall, the MCP address and
// the policy label (issue 25: line 2 was cut at 100 columns).
func TestHeaderFitsWithoutCuts(t *testing.T) {
	const demoEndpoint = "http://127.0.0.1:41597/mcp (token: default; n mints another)"
	cases := []struct {
		name    string
		info    consent.Info
		version string
		remote  bool
		keep    [2][]string // words line 1 and line 2 keep at every width
	}{
		{"headless demo", consent.Info{
			Browser:  "Chromium headless (no window) · pid 20175 · profile /tmp/h25d/home-b120/tabwarden-demo-3812993/profile",
			Endpoint: demoEndpoint, Policy: "none (demo; the policy run has its own)"}, "dev", false,
			[2][]string{{"consent: STRICT", "headless"}, {"MCP: http://127.0.0.1:41597/mcp", "policy: none"}}},
		{"launched", consent.Info{Browser: "Chromium headless (no window) · 156.0.8078.114", Endpoint: demoEndpoint,
			Policy: "origins: 3 allowed · uploads blocked · consent ≤ thread · grants: read, click ≤ 15 min"}, "v1.4.0-rc.2+dirty", false,
			[2][]string{{"consent: STRICT", "headless"}, {"MCP: http://127.0.0.1:41597/mcp"}}},
		{"attached", consent.Info{Browser: "attached, no network wall · wss://production-sfo.browserless.io/chromium?token=…",
			Endpoint: demoEndpoint, Policy: "no managed policy"}, "dev", true,
			[2][]string{{"consent: STRICT", "attached, no network wall"}, {"MCP: http://127.0.0.1:41597/mcp", "policy: no managed policy"}}},
		{"script", consent.Info{Browser: "not started (--script drives the screen only)",
			Endpoint: "not started (--script drives the screen only)", Policy: "no managed policy"}, "", false,
			[2][]string{{"consent: STRICT", "browser: not started"}, {"MCP: not started", "policy: no managed policy"}}},
	}
	for _, c := range cases {
		full := header{s: consent.State{Profile: consent.ProfileStrict, Info: c.info}, version: c.version, st: defaultStyles(), remote: c.remote}.lines(1000)
		for _, w := range []int{60, 80, 100, 120} {
			t.Run(fmt.Sprintf("%s/%d", c.name, w), func(t *testing.T) {
				got := header{s: consent.State{Profile: consent.ProfileStrict, Info: c.info}, version: c.version, st: defaultStyles(), remote: c.remote}.lines(w)
				for i, l := range got {
					l = plain(l)
					if width(l) > w {
						t.Errorf("line %d is %d cells wide: %q", i+1, width(l), l)
					}
					if strings.Contains(l, "…") && !strings.Contains(plain(full[i]), "…") {
						t.Errorf("line %d is cut: %q", i+1, l)
					}
					// Every word shown is a whole word of the full line
					// (or the count of dropped policy parts).
					words := strings.Fields(plain(full[i]))
					for _, wd := range strings.Fields(l) {
						if !slices.Contains(words, wd) && wd != "more" && !strings.HasPrefix(wd, "+") {
							t.Errorf("line %d shows %q, no whole word of %q", i+1, wd, plain(full[i]))
						}
					}
					for _, k := range c.keep[i] {
						if !strings.Contains(l, k) {
							t.Errorf("line %d lost %q: %q", i+1, k, l)
						}
					}
				}
				// A policy of several parts shows whole or with a count
				// of the rest, never partly without saying so; only the
				// page view's 60-column side drops it whole.
				if p := plain(got[1]); c.name == "launched" && w >= 100 && !strings.Contains(p, "policy: origins: 3 allowed · uploads blocked") {
					t.Errorf("at %d columns the policy lost its second part: %q", w, p)
				}
				if p := plain(got[1]); strings.Contains(p, "policy: origins") && !strings.Contains(p, "grants: read, click ≤ 15 min") && !strings.Contains(p, "more") {
					t.Errorf("at %d columns the policy is shown in part without a count: %q", w, p)
				}
				if w >= 100 && c.name == "headless demo" && !strings.Contains(plain(got[1]), "(demo; the policy run has its own)") {
					t.Errorf("at %d columns the demo's policy lost its explanation: %q", w, plain(got[1]))
				}
			})
		}
	}
}
