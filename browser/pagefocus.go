package browser

import (
	"context"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
)

// Focus is where keys typed into a tab go: the focused element as the
// accessibility tree names it, and its box in the viewport. A zero Role
// means no element has focus: keys go to the page itself.
type Focus struct {
	Role, Name string
	// Box is x, y, width, height in viewport CSS pixels; HasBox is false
	// when the element has no box on screen.
	Box    [4]float64
	HasBox bool
}

// Label is the focused element as the page view's text names it
// ("[textbox] User name"), "" when nothing has focus.
func (f Focus) Label() string {
	if f.Role == "" {
		return ""
	}
	name := f.Name
	if name == "" {
		name = "(unnamed)"
	}
	return "[" + f.Role + "] " + name
}

// PageFocus reports where the operator's typed keys go in tab (design.md
// §13, the page view's input mode), read like PageText from the
// accessibility tree on a session of its own: no script runs in the page,
// and the field's value is never read. The operator's eyes only.
func (b *Browser) PageFocus(ctx context.Context, tab consent.TabID) (Focus, error) {
	sid, detach, err := b.ownSession(ctx, tab)
	if err != nil {
		return Focus{}, err
	}
	defer detach()
	cctx, cancel := b.call(ctx)
	defer cancel()
	c := client{b: b, sid: sid, ctx: cctx}
	res, err := proto.AccessibilityGetFullAXTree{}.Call(c)
	if err != nil {
		return Focus{}, b.opFailed("read the page's focus", err)
	}
	n := axFocused(res.Nodes)
	if n == nil {
		return Focus{}, nil
	}
	f := Focus{Role: axString(n.Role), Name: oneLine(axString(n.Name))}
	if n.BackendDOMNodeID != 0 {
		// Best effort: a focused element without a box (display:contents,
		// scrolled out of a clipped area) is still named.
		if q, err := (proto.DOMGetContentQuads{BackendNodeID: n.BackendDOMNodeID}).Call(c); err == nil && len(q.Quads) > 0 {
			f.Box, f.HasBox = quadBox(q.Quads[0])
		}
	}
	return f, nil
}

// axFocused is the focused element of an accessibility tree: the last
// (innermost) node with the focused property, other than the document
// itself, which holds focus when no element does.
func axFocused(nodes []*proto.AccessibilityAXNode) *proto.AccessibilityAXNode {
	var found *proto.AccessibilityAXNode
	for _, n := range nodes {
		if n.Ignored {
			continue
		}
		switch axString(n.Role) {
		case "RootWebArea", "WebArea":
			continue
		}
		for _, p := range n.Properties {
			if p.Name == proto.AccessibilityAXPropertyNameFocused && p.Value != nil && p.Value.Value.Bool() {
				found = n
			}
		}
	}
	return found
}

// quadBox is the bounding box of a quad (four x, y corners).
func quadBox(q proto.DOMQuad) ([4]float64, bool) {
	if len(q) < 8 {
		return [4]float64{}, false
	}
	x0, y0, x1, y1 := q[0], q[1], q[0], q[1]
	for i := 2; i+1 < len(q); i += 2 {
		x0, x1 = min(x0, q[i]), max(x1, q[i])
		y0, y1 = min(y0, q[i+1]), max(y1, q[i+1])
	}
	if x1 <= x0 || y1 <= y0 {
		return [4]float64{}, false
	}
	return [4]float64{x0, y0, x1 - x0, y1 - y0}, true
}
