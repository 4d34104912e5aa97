package tui

import (
	"strings"

	"github.com/tabwarden/tabwarden/consent"
)

// header shows what the operator must always know: the consent profile
// first (so no width can hide it), then browser, MCP endpoint and policy.
type header struct {
	s       consent.State
	version string
	st      styles
	// remote is an SSH screen's, where n mints nothing.
	remote bool
}

func (h header) Render(w, height int) string { return block(h.lines(w), w, height) }

func (h header) lines(w int) []string {
	name := "tabwarden"
	if h.version != "" {
		name += " " + clean(h.version)
	}
	profile := string(h.s.Profile)
	if profile == "" {
		profile = "unknown"
	}
	first := name + "  consent: " + strings.ToUpper(profile) + "  browser: " + orDash(clean(h.s.Info.Browser))
	endpoint := h.s.Info.Endpoint
	if h.remote {
		// The console's endpoint line offers its own terminal's n.
		endpoint = strings.Replace(endpoint, "; n mints another", "", 1)
	}
	second := "MCP: " + orDash(clean(endpoint)) + "  policy: " + orDash(clean(h.s.Info.Policy))
	return []string{h.st.title.Render(trunc(first, w)), trunc(second, w)}
}
