package tui

import (
	"fmt"
	"strings"

	"github.com/tabwarden/tabwarden/consent"
)

// header shows what the operator must always know: the consent profile
// first (so no width can hide it), then browser, MCP endpoint and policy.
//
// A narrow header drops or shortens its lower-priority parts, whole, in
// one order (docs/decisions.md, "Issue 25"), and never cuts a word:
// line 1 loses the browser's details (profile path, then pid), then the
// version, then the browser's parenthesis ("(no window)"), then its
// "browser:" label; line 2 loses
// the endpoint's token note, then the policy's later parts (counted as "+N
// more"), then the policy's parenthesis. Only a terminal too narrow for
// what is left (under about 50 columns) drops whole parts from the right,
// and under that the first part is cut.
type header struct {
	s       consent.State
	version string
	st      styles
	// remote is an SSH screen's, where n mints nothing.
	remote bool
}

func (h header) Render(w, height int) string { return block(h.lines(w), w, height) }

func (h header) lines(w int) []string {
	name := headerPart{forms: []string{"tabwarden"}}
	if h.version != "" {
		name.forms = []string{"tabwarden " + clean(h.version), "tabwarden"}
	}
	profile := string(h.s.Profile)
	if profile == "" {
		profile = "unknown"
	}
	consentPart := headerPart{forms: []string{"consent: " + strings.ToUpper(profile)}}
	browser, details := browserForms(orDash(clean(h.s.Info.Browser)))
	first := fitHeader(w, []*headerPart{&name, &consentPart, &browser}, []headerStep{
		{&browser, details}, {&name, 1}, {&browser, len(browser.forms) - 1},
	})

	endpoint := h.s.Info.Endpoint
	if h.remote {
		// The console's endpoint line offers its own terminal's n.
		endpoint = strings.Replace(endpoint, "; n mints another", "", 1)
	}
	mcp := headerPart{forms: labelled("MCP: ", withoutParen(orDash(clean(endpoint))))}
	policy, groups := policyForms(orDash(clean(h.s.Info.Policy)))
	second := fitHeader(w, []*headerPart{&mcp, &policy}, []headerStep{
		{&mcp, 1}, {&policy, groups}, {&policy, len(policy.forms) - 1},
	})
	return []string{h.st.title.Render(first), second}
}

// headerPart is one part of a header line: its forms, longest first; at is
// the one shown.
type headerPart struct {
	forms []string
	at    int
}

// headerStep lets part shrink, while its line is too wide, as far as form
// upto.
type headerStep struct {
	part *headerPart
	upto int
}

// fitHeader joins parts with two spaces, taking steps in order until the
// line fits w; what still does not fit drops whole parts from the right,
// and a lone part too wide for w is cut.
func fitHeader(w int, parts []*headerPart, steps []headerStep) string {
	line := func(n int) string {
		var out []string
		for _, p := range parts[:n] {
			if s := p.forms[p.at]; s != "" {
				out = append(out, s)
			}
		}
		return strings.Join(out, "  ")
	}
	shrinkParts(steps, func() bool { return width(line(len(parts))) <= w })
	n := len(parts)
	for n > 1 && width(line(n)) > w {
		n--
	}
	return trunc(line(n), w)
}

// shrinkParts takes steps in order, each as far as it goes, until fits.
func shrinkParts(steps []headerStep, fits func() bool) {
	for _, s := range steps {
		for !fits() && s.part.at < min(s.upto, len(s.part.forms)-1) {
			s.part.at++
		}
	}
}

// browserForms are the browser field's forms: its " · " groups dropped
// from the end down to the first (the browser package puts the most
// important first), then the first without its parenthesis, then that
// without the "browser:" label. details is the form with the first group
// alone.
func browserForms(v string) (p headerPart, details int) {
	groups := strings.Split(v, " · ")
	for n := len(groups); n >= 1; n-- {
		p.forms = append(p.forms, strings.Join(groups[:n], " · "))
	}
	details = len(p.forms) - 1
	if short := withoutParen(groups[0]); len(short) > 1 {
		p.forms = append(p.forms, short[1])
	}
	last := p.forms[len(p.forms)-1]
	p.forms = append(labelled("browser: ", p.forms), last)
	return p, details
}

// policyForms are the policy field's forms: whole, then its later " · "
// groups replaced by a count ("+2 more"), then the first group without its
// parenthesis. groups is the form with the first group and the count.
func policyForms(v string) (p headerPart, groups int) {
	parts := strings.Split(v, " · ")
	p.forms = []string{v}
	for n := len(parts) - 1; n >= 1; n-- {
		p.forms = append(p.forms, strings.Join(parts[:n], " · ")+fmt.Sprintf(" · +%d more", len(parts)-n))
	}
	groups = len(p.forms) - 1
	if short := withoutParen(parts[0]); len(short) > 1 && len(parts) == 1 {
		p.forms = append(p.forms, short[1])
	}
	p.forms = labelled("policy: ", p.forms)
	return p, groups
}

// withoutParen is v, then v without a trailing parenthesis ("not started
// (--script …)" → "not started") when it has one.
func withoutParen(v string) []string {
	if i := strings.Index(v, " ("); i > 0 && strings.HasSuffix(v, ")") {
		return []string{v, v[:i]}
	}
	return []string{v}
}

func labelled(label string, forms []string) []string {
	out := make([]string, len(forms))
	for i, f := range forms {
		out[i] = label + f
	}
	return out
}
