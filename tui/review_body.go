package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/tabwarden/tabwarden/consent"
)

// reviewBody is the "what will happen" part of a review panel, laid out for
// width w. It is the part that scrolls, so it may be long (a 20-step plan,
// 8000 characters of text to enter, a 256 KiB disclosure). tab is the
// review's tab as the inventory knows it, nil when it does not; only its
// stayText is used (the viewport is refilled when that changes, bodyKey).
// expand (enter) shows a site tool's whole input instead of its first
// collapsedInputLines.
func reviewBody(r *consent.Review, tab *consent.TabState, w int, expand bool) []string {
	var b blockWriter
	b.w = w
	switch r.Kind {
	case consent.KindNavigation:
		b.field("will", fmt.Sprintf("load this origin in tab %s", clean(string(r.Tab))))
		b.para(stayText(tab))
	case consent.KindRead:
		b.field("will", "let this conversation read this origin: observe pages, list and call site tools, act and verify")
	case consent.KindAction:
		if r.Action == nil {
			b.field("will", "perform one page action (no details supplied)")
			break
		}
		b.action("will", *r.Action)
	case consent.KindPlan:
		b.field("will", fmt.Sprintf("run these %d steps in order; each target is re-checked before its step runs", len(r.Plan)))
		for i, a := range r.Plan {
			b.action(fmt.Sprintf("%2d.", i+1), a)
		}
	case consent.KindUpload:
		if r.Upload == nil {
			b.field("will", "upload a file (no details supplied)")
			break
		}
		u := r.Upload
		b.field("will", "upload a file into "+target(u.Ref, u.Role, u.Name))
		b.field("file", clean(u.Filename))
		b.field("size", humanBytes(u.Size))
		b.field("sha256", groupedHash(clean(u.SHA256)))
	case consent.KindToolCall:
		if r.ToolCall == nil {
			b.field("will", "call a site tool (no details supplied)")
			break
		}
		t := r.ToolCall
		name := clean(t.ToolName)
		if t.ToolTitle != "" {
			name += " — " + clean(t.ToolTitle)
		}
		b.field("will", "call the site tool "+name)
		if values := strings.Split(cleanBlock(t.InputValues), "\n"); t.InputValues != "" {
			b.line("input (values sent; keys that look secret are masked):")
			shown := values
			if !expand && len(values) > collapsedInputLines {
				shown = values[:collapsedInputLines]
			}
			for _, l := range shown {
				for _, wl := range wrap(l, w-2) {
					b.line("  " + wl)
				}
			}
			if len(shown) < len(values) {
				b.line(fmt.Sprintf("  … %d more lines (enter shows all)", len(values)-len(shown)))
			}
		} else {
			summary := clean(t.InputSummary)
			if summary == "" {
				summary = "(no input)"
			}
			b.field("input", summary)
		}
		if t.ReadOnlyHint {
			b.field("read-only", "yes, the site says so — advisory only: nothing checks it, the call is still gated")
		} else {
			b.field("read-only", "no: the site does not say the call only reads")
		}
	case consent.KindDisclosure:
		if r.Disclosure == nil {
			b.field("will", "share a site-tool result (no details supplied)")
			break
		}
		d := r.Disclosure
		b.field("will", fmt.Sprintf("share the result of the site tool %s with the conversation", clean(d.ToolName)))
		b.field("size", humanBytes(int64(d.Size)))
		if d.SHA256 != "" {
			b.field("sha256", groupedHash(clean(d.SHA256)))
		}
		b.line("result (complete; j/k pgup/pgdn scroll):")
		for _, l := range strings.Split(prettyResult(d.Result), "\n") {
			for _, wl := range wrap(l, w-2) {
				b.line("  " + wl)
			}
		}
	case consent.KindThread:
		b.field("will", "allow browser control for this whole thread: navigation, reading and scrolling across all of this conversation's tabs, on any origin managed policy allows")
		b.field("still", "click, fill, select, key, uploads and site-tool calls ask \"Allow once\"; sharing results still asks")
	case consent.KindSession:
		b.field("will", "allow everything for this session, on any origin managed policy allows: actions run without asking")
		b.field("still", "take-over, managed policy, the audit log and busy/stale checks still apply")
	default:
		b.field("will", fmt.Sprintf("unknown review kind %q — deny unless you know what it is", clean(string(r.Kind))))
	}
	return b.lines
}

// groupedHash spaces a hex digest in groups of eight, so a narrow panel
// breaks it between groups and the operator can compare it group by group
// with the one the agent or the file shows; a digest cut mid-group reads as
// two different strings.
func groupedHash(h string) string {
	if len(h) <= 8 || strings.ContainsRune(h, ' ') {
		return h
	}
	var b strings.Builder
	for i := 0; i < len(h); i += 8 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(h[i:min(i+8, len(h))])
	}
	return b.String()
}

// collapsedInputLines is how much of a site tool's input a review shows
// before enter expands it.
const collapsedInputLines = 8

// stayText says what the tab shows while a navigation review waits: the
// request is held, so the tab keeps the page it had. Only a blank tab (a
// new one, or one released after a refusal) is "about:blank"; a tab on a
// page names that page's origin, since the review's origin is where it
// would go, not where it is.
func stayText(tab *consent.TabState) string {
	// The held request is the new page's: the page the tab shows may be
	// of the same site (the walk read "no request reaches the site" beside
	// a tab showing that site as a contradiction).
	const held = " and the new page is not requested."
	// The browser puts a tab whose load was refused on about:blank, so it
	// shows neither the destination nor an error page an agent could read.
	const denied = " If you deny, the tab is cleared to about:blank."
	if tab == nil {
		return "Until you decide, the tab stays where it is" + held + denied
	}
	if blankURL(tab.URL) {
		return "Until you decide, the tab stays about:blank" + held
	}
	if u, err := url.Parse(tab.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return "Until you decide, the tab keeps showing " + clean(u.Scheme+"://"+u.Host) + held + denied
	}
	return "Until you decide, the tab keeps its current page" + held + denied
}

// blankURL reports whether a tab shows nothing: no URL yet, or about:blank.
func blankURL(u string) bool {
	doc, _, _ := strings.Cut(strings.TrimSpace(u), "#")
	return doc == "" || doc == "about:blank"
}

// prettyResult indents a JSON result for reading; anything else is shown as
// it came. Either way control characters are neutralised.
func prettyResult(s string) string {
	var out bytes.Buffer
	if json.Valid([]byte(s)) && json.Indent(&out, []byte(s), "", "  ") == nil {
		s = out.String()
	}
	return cleanBlock(s)
}

// target renders an element as `e12 button "Add to cart"`.
// target names an action's element as the operator sees it on the page:
// its role and accessible name. The observation's ref (e12) means nothing
// to the operator; it stands in only when the element has no name.
func target(ref, role, name string) string {
	parts := []string{}
	if role != "" {
		parts = append(parts, clean(role))
	}
	if name != "" {
		parts = append(parts, fmt.Sprintf("%q", clean(name)))
	} else if ref != "" {
		parts = append(parts, clean(ref))
	}
	if len(parts) == 0 {
		return "(no target)"
	}
	return "the " + strings.Join(parts, " ")
}

type blockWriter struct {
	w     int
	lines []string
}

const fieldLabelWidth = 10

// field writes "label     value", the value word-wrapped under itself.
func (b *blockWriter) field(label, value string) {
	indent := strings.Repeat(" ", fieldLabelWidth+1)
	for i, l := range wrap(value, b.w-fieldLabelWidth-1) {
		if i == 0 {
			b.lines = append(b.lines, padRight(label, fieldLabelWidth)+" "+l)
		} else {
			b.lines = append(b.lines, indent+l)
		}
	}
}

func (b *blockWriter) para(s string) {
	for _, l := range wrap(s, b.w-fieldLabelWidth-1) {
		b.lines = append(b.lines, strings.Repeat(" ", fieldLabelWidth+1)+l)
	}
}

func (b *blockWriter) line(s string) { b.lines = append(b.lines, s) }

// action writes one page action: what, on which element, with what input.
func (b *blockWriter) action(label string, a consent.Action) {
	switch a.Type {
	case consent.ActionClick:
		if a.Coordinate {
			b.field(label, fmt.Sprintf("click at x=%g, y=%g (page coordinates; the screen is re-captured and compared before dispatch)", a.X, a.Y))
			return
		}
		b.field(label, "click "+target(a.Ref, a.Role, a.Name))
	case consent.ActionFill:
		b.field(label, "fill "+target(a.Ref, a.Role, a.Name)+" (replaces its content)")
		b.field("text", fmt.Sprintf("%d characters:", len([]rune(a.Text))))
		for _, l := range strings.Split(cleanBlock(a.Text), "\n") {
			for _, wl := range wrap(l, b.w-fieldLabelWidth-3) {
				b.lines = append(b.lines, strings.Repeat(" ", fieldLabelWidth+1)+"│ "+wl)
			}
		}
	case consent.ActionSelect:
		choice := fmt.Sprintf("value %q", clean(a.Value))
		if a.Value == "" {
			choice = fmt.Sprintf("label %q", clean(a.Label))
		}
		b.field(label, "select "+choice+" in "+target(a.Ref, a.Role, a.Name))
	case consent.ActionKey:
		s := "press the key " + clean(a.Key)
		if a.Ref != "" || a.Name != "" {
			s += " on " + target(a.Ref, a.Role, a.Name)
		}
		b.field(label, s)
	case consent.ActionScroll:
		dir := "down"
		n := a.DeltaY
		if n < 0 {
			dir, n = "up", -n
		}
		b.field(label, fmt.Sprintf("scroll %s %d px (deltaY %d) at x=%g, y=%g", dir, n, a.DeltaY, a.X, a.Y))
	case "verify":
		b.field(label, verifyText(a))
	default:
		if a.Assertion != "" {
			b.field(label, verifyText(a))
			return
		}
		b.field(label, fmt.Sprintf("%s %s", clean(string(a.Type)), target(a.Ref, a.Role, a.Name)))
	}
}

func verifyText(a consent.Action) string {
	if a.Role != "" || a.Name != "" {
		return fmt.Sprintf("verify %s %s", clean(a.Assertion), target("", a.Role, a.Name))
	}
	return fmt.Sprintf("verify %s %q", clean(a.Assertion), clean(a.Text))
}
