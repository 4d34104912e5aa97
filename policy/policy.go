package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Decision codes; they equal the design.md §5 codes errcode.WebsiteBlocked
// and errcode.UploadBlocked.
const (
	CodeWebsiteBlocked = "website_blocked"
	CodeUploadBlocked  = "upload_blocked"
)

// Operator- and agent-facing texts of design.md §8.
const (
	MsgWebsiteBlocked = "This website is not approved by your organization."
	MsgUploadBlocked  = "Browser uploads are blocked by your team's policy."
	// MsgPageIncomplete is what the TUI shows for a page whose sub-resources
	// the policy refused.
	MsgPageIncomplete = "This page may be incomplete. Your organization's policy blocked a browser request."
)

// Policy is the merged managed policy. Treat it as read-only: Decide relies
// on no one mutating it. A nil *Policy means no managed policy.
type Policy struct {
	// Sources are the files merged into this policy, in the order given.
	Sources []string
	// Origins are the allowed exact origins, normalized, sorted and unique.
	// nil means unrestricted; a non-nil empty slice allows no website.
	Origins []string
	// BlockUploads refuses every request that could carry data upstream.
	BlockUploads bool
	// ConsentFloor is the most permissive consent profile allowed
	// (ProfileStrict, ProfileThread or ProfileTrusted); "" sets no limit.
	ConsentFloor string
	// MaxGrantMinutes caps a scoped grant's window (design.md §4); 0 sets no cap.
	MaxGrantMinutes int
	// Grantable lists the step classes a scoped grant may cover, sorted
	// and unique. nil allows every class; a non-nil empty slice turns
	// scoped grants off.
	Grantable []string
}

// Decision is the verdict on one browser request. Code and Message are empty
// when Allow is true.
type Decision struct {
	Allow   bool
	Code    string
	Message string
}

var allow = Decision{Allow: true}

// Merge combines policies into the most restrictive reading of all of them
// (see the package doc). nil entries are skipped; with none left the result
// is nil.
func Merge(ps ...*Policy) *Policy {
	var m *Policy
	for _, p := range ps {
		if p == nil {
			continue
		}
		if m == nil {
			m = &Policy{ConsentFloor: p.ConsentFloor, MaxGrantMinutes: p.MaxGrantMinutes}
			if p.Origins != nil {
				m.Origins = slices.Clone(p.Origins)
			}
			if p.Grantable != nil {
				m.Grantable = slices.Clone(p.Grantable)
			}
		} else {
			m.Origins = intersect(m.Origins, p.Origins)
			m.ConsentFloor = stricter(m.ConsentFloor, p.ConsentFloor)
			m.MaxGrantMinutes = minGrantMinutes(m.MaxGrantMinutes, p.MaxGrantMinutes)
			m.Grantable = intersectGrantable(m.Grantable, p.Grantable)
		}
		m.Sources = append(m.Sources, p.Sources...)
		m.BlockUploads = m.BlockUploads || p.BlockUploads
	}
	return m
}

// intersect treats nil as "everything".
func intersect(a, b []string) []string {
	switch {
	case a == nil:
		return slices.Clone(b)
	case b == nil:
		return a
	}
	out := []string{}
	for _, o := range a {
		if slices.Contains(b, o) {
			out = append(out, o)
		}
	}
	return out
}

// stricter treats "" as "no limit".
func stricter(a, b string) string {
	if a == "" || (b != "" && profileRank[b] < profileRank[a]) {
		return b
	}
	return a
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// AllowsOrigin reports whether the policy lets the browser reach origin, an
// http(s) origin in any spelling NormalizeOrigin accepts. An origin that does
// not normalize is allowed only when no origin list is set.
func (p *Policy) AllowsOrigin(origin string) bool {
	if p == nil || p.Origins == nil {
		return true
	}
	o, err := NormalizeOrigin(origin)
	return err == nil && slices.Contains(p.Origins, o)
}

// Decide judges one browser request. method is the HTTP method as Chromium
// reports it ("" is not GET: the caller must say); hasBody is true when the
// request carries post data; isWebSocket is true for a WebSocket handshake
// (a ws: or wss: URL counts as one either way). The origin check comes first,
// so a request that breaks both rules reports website_blocked.
func (p *Policy) Decide(rawURL, method string, hasBody, isWebSocket bool) Decision {
	if p == nil || staysInBrowser(rawURL) {
		return allow
	}
	if p.Origins != nil {
		o, ok := requestOrigin(rawURL)
		if !ok || !slices.Contains(p.Origins, o) {
			return Decision{Code: CodeWebsiteBlocked, Message: MsgWebsiteBlocked}
		}
	}
	if p.BlockUploads {
		scheme, _, _ := strings.Cut(strings.ToLower(rawURL), ":")
		ws := isWebSocket || scheme == "ws" || scheme == "wss"
		switch m := strings.ToUpper(method); {
		case ws, hasBody, m != "GET" && m != "HEAD" && m != "OPTIONS":
			return Decision{Code: CodeUploadBlocked, Message: MsgUploadBlocked}
		}
	}
	return allow
}

// staysInBrowser reports URLs whose content comes from the browser itself,
// never from a server: nothing can be fetched from or sent to a site.
func staysInBrowser(rawURL string) bool {
	u := strings.ToLower(strings.TrimSpace(rawURL))
	if doc, _, _ := strings.Cut(u, "#"); doc == "about:blank" || doc == "about:srcdoc" {
		return true
	}
	return strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:")
}

// Summary is a one-line description for the TUI header.
func (p *Policy) Summary() string {
	if p == nil || len(p.Sources) == 0 {
		return "no managed policy"
	}
	var parts []string
	switch {
	case p.Origins == nil:
	case len(p.Origins) == 0:
		parts = append(parts, "origins: none allowed")
	default:
		parts = append(parts, fmt.Sprintf("origins: %d allowed", len(p.Origins)))
	}
	if p.BlockUploads {
		parts = append(parts, "uploads blocked")
	}
	if p.ConsentFloor != "" {
		parts = append(parts, "consent ≤ "+p.ConsentFloor)
	}
	if g := p.grantsSummary(); g != "" {
		parts = append(parts, g)
	}
	if len(parts) == 0 {
		return "managed policy: no restrictions"
	}
	return strings.Join(parts, " · ")
}

// Format is the multi-line report of `tabwarden policy check`.
func (p *Policy) Format() string {
	if p == nil || len(p.Sources) == 0 {
		return "No managed policy.\n"
	}
	var b strings.Builder
	if len(p.Sources) == 1 {
		b.WriteString("Managed policy from 1 file:\n")
	} else {
		fmt.Fprintf(&b, "Managed policy from %d files:\n", len(p.Sources))
	}
	for _, s := range p.Sources {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	switch {
	case p.Origins == nil:
		b.WriteString("Browser origins: unrestricted (no file sets browserOrigins)\n")
	case len(p.Origins) == 0:
		b.WriteString("Browser origins: none allowed (every website is blocked)\n")
	default:
		fmt.Fprintf(&b, "Browser origins: %d allowed\n", len(p.Origins))
		for _, o := range p.Origins {
			if d := displayOrigin(o); d != "" {
				fmt.Fprintf(&b, "  %s (%s)\n", o, d)
			} else {
				fmt.Fprintf(&b, "  %s\n", o)
			}
		}
	}
	if p.BlockUploads {
		b.WriteString("Browser uploads: blocked (only GET, HEAD, OPTIONS without a body; no WebSockets; no file choosers)\n")
	} else {
		b.WriteString("Browser uploads: allowed\n")
	}
	if p.ConsentFloor != "" {
		fmt.Fprintf(&b, "Consent profile: at most %s\n", p.ConsentFloor)
	} else {
		b.WriteString("Consent profile: any\n")
	}
	p.formatGrants(&b)
	return b.String()
}
