package browser

import (
	"context"
	"strings"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
)

// maxPageTextLines bounds what PageText returns: a page view shows a
// screenful at a time and scrolls through the rest.
const maxPageTextLines = 2000

// PageText is tab's page as the operator reads it in the page view's text
// mode (design.md §13), from Chromium's accessibility tree through a typed
// CDP call on a session of its own: headings, links, buttons, fields by
// their names, and the text between them, in document order. It runs no
// script in the page and never includes a field's value (a password or
// what the operator typed is not shown). Like the view's frames it is the
// operator's eyes only: no agent, log or audit gets it.
func (b *Browser) PageText(ctx context.Context, tab consent.TabID) ([]string, error) {
	sid, detach, err := b.ownSession(ctx, tab)
	if err != nil {
		return nil, err
	}
	defer detach()
	cctx, cancel := b.call(ctx)
	defer cancel()
	res, err := proto.AccessibilityGetFullAXTree{}.Call(client{b: b, sid: sid, ctx: cctx})
	if err != nil {
		return nil, b.opFailed("read the page's text", err)
	}
	return axLines(res.Nodes), nil
}

// axLines renders an accessibility tree as text lines, depth first from
// its root.
func axLines(nodes []*proto.AccessibilityAXNode) []string {
	byID := make(map[proto.AccessibilityAXNodeID]*proto.AccessibilityAXNode, len(nodes))
	var root *proto.AccessibilityAXNode
	for _, n := range nodes {
		byID[n.NodeID] = n
		if root == nil && n.ParentID == "" {
			root = n
		}
	}
	var out []string
	var walk func(n *proto.AccessibilityAXNode, depth int)
	walk = func(n *proto.AccessibilityAXNode, depth int) {
		if n == nil || len(out) >= maxPageTextLines || depth > 200 {
			return
		}
		role, name := axString(n.Role), oneLine(axString(n.Name))
		descend := true
		if !n.Ignored {
			switch role {
			case "StaticText":
				if name != "" {
					out = append(out, name)
				}
				descend = false
			case "heading":
				if name != "" {
					out = append(out, "# "+name)
					descend = false
				}
			case "link", "button", "textbox", "searchbox", "combobox", "checkbox", "radio",
				"switch", "menuitem", "tab", "option", "image", "img", "slider", "spinbutton":
				if name == "" {
					name = "(unnamed)"
				}
				out = append(out, "["+role+"] "+name)
				// A control's text is its name; its inner text
				// (and a field's value) is not repeated.
				descend = false
			}
		}
		if !descend {
			return
		}
		for _, id := range n.ChildIDs {
			walk(byID[id], depth+1)
		}
	}
	walk(root, 0)
	return out
}

func axString(v *proto.AccessibilityAXValue) string {
	if v == nil {
		return ""
	}
	return v.Value.Str()
}

// oneLine folds whitespace, so a name never spans lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
