package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Scoped grants (design.md §4): the classes of step an operator's `s` may
// allow for a while, and the longest while. The consent engine applies
// them; this file only reads, checks and merges them.

// MaxGrantMinutes is the largest execution.maxGrantMinutes a file may set
// (a day): a grant that outlives a working day is not "a while".
const MaxGrantMinutes = 1440

// GrantClasses are the classes execution.grantable may list, besides
// "site_tool:NAME" for one site tool; "site_tool" stands for every site tool.
var GrantClasses = []string{"read", "scroll", "click", "select", "key", "fill", "site_tool"}

// MsgGrantClass is the problem text for an entry that names no class.
const MsgGrantClass = "Use read, scroll, click, select, key, fill, site_tool or site_tool:NAME."

// siteToolName is the sanitizer's rule for a site tool's name (design.md §7).
var siteToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func validGrantClass(c string) bool {
	if slices.Contains(GrantClasses, c) {
		return true
	}
	name, ok := strings.CutPrefix(c, "site_tool:")
	return ok && siteToolName.MatchString(name)
}

// grantAllows reports whether list (nil: every class) lets class c be granted.
func grantAllows(list []string, c string) bool {
	if list == nil || slices.Contains(list, c) {
		return true
	}
	return strings.HasPrefix(c, "site_tool:") && slices.Contains(list, "site_tool")
}

// intersectGrantable is the classes both lists allow; nil is "every class".
// "site_tool" in one list and "site_tool:x" in the other give "site_tool:x".
func intersectGrantable(a, b []string) []string {
	switch {
	case a == nil:
		return slices.Clone(b)
	case b == nil:
		return a
	}
	out := []string{}
	for _, c := range append(slices.Clone(a), b...) {
		if grantAllows(a, c) && grantAllows(b, c) {
			out = append(out, c)
		}
	}
	return sortedSet(out)
}

// minGrantMinutes treats 0 as "no cap".
func minGrantMinutes(a, b int) int {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

func (l *loader) maxGrantMinutes(n *yaml.Node, p *Policy) {
	var m int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&m) != nil || m < 1 || m > MaxGrantMinutes {
		l.key(fmt.Sprintf("maxGrantMinutes %q", n.Value), fmt.Sprintf("Use a whole number of minutes from 1 to %d; to turn scoped grants off, set grantable: [].", MaxGrantMinutes))
		return
	}
	p.MaxGrantMinutes = m
}

// grantable returns the checked classes; never nil, because a present list,
// even an empty one, restricts.
func (l *loader) grantable(n *yaml.Node) []string {
	out := []string{}
	if n.Kind != yaml.SequenceNode {
		l.key("grantable", "Use a list of step classes; [] turns scoped grants off.")
		return out
	}
	for i, e := range n.Content {
		e = deref(e)
		if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" || !validGrantClass(e.Value) {
			l.key(fmt.Sprintf("grantable[%d] %q", i, e.Value), MsgGrantClass)
			continue
		}
		out = append(out, e.Value)
	}
	return sortedSet(out)
}

// grantsSummary is the scoped-grant part of Summary ("" when unrestricted).
func (p *Policy) grantsSummary() string {
	switch {
	case p.Grantable != nil && len(p.Grantable) == 0:
		return "scoped grants off"
	case p.Grantable != nil && p.MaxGrantMinutes > 0:
		return fmt.Sprintf("grants: %s ≤ %d min", strings.Join(p.Grantable, ","), p.MaxGrantMinutes)
	case p.Grantable != nil:
		return "grants: " + strings.Join(p.Grantable, ",")
	case p.MaxGrantMinutes > 0:
		return fmt.Sprintf("grants ≤ %d min", p.MaxGrantMinutes)
	}
	return ""
}

// formatGrants is the scoped-grant part of Format.
func (p *Policy) formatGrants(b *strings.Builder) {
	switch {
	case p.Grantable == nil:
		b.WriteString("Scoped grants (s): every class may be granted\n")
	case len(p.Grantable) == 0:
		b.WriteString("Scoped grants (s): off (every step asks; a allows once)\n")
	default:
		fmt.Fprintf(b, "Scoped grants (s): only %s\n", strings.Join(p.Grantable, ", "))
	}
	if p.MaxGrantMinutes > 0 {
		fmt.Fprintf(b, "Scoped grant window: at most %d min\n", p.MaxGrantMinutes)
	} else if p.Grantable == nil || len(p.Grantable) > 0 {
		b.WriteString("Scoped grant window: as --grant-window sets (no cap)\n")
	}
}
