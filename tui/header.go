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
	second := "MCP: " + orDash(clean(h.s.Info.Endpoint)) + "  policy: " + orDash(clean(h.s.Info.Policy))
	return []string{h.st.title.Render(trunc(first, w)), trunc(second, w)}
}
