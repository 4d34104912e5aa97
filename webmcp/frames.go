package webmcp

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"strings"

	"github.com/go-rod/rod/lib/proto"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// frameContext is a frame's default (main-world) execution context and the
// session it lives in, with the polyfill's bridge once bridge found it.
type frameContext struct {
	sid    proto.TargetSessionID
	id     proto.RuntimeExecutionContextID
	bridge proto.RuntimeRemoteObjectID // in bridgeGroup; "" until found
}

// bridgeGroup holds the bridge objects bridge found. They live as long as
// their context (each frameContext entry goes with it); Close releases
// what is left.
const bridgeGroup = "tabwarden-bridge"

// snapshot is the identity of a listing: the document revision and the
// generation of each frame at the time.
type frameInfo struct {
	id     proto.PageFrameID
	parent proto.PageFrameID
	origin string
	gen    uint64
}

// frames returns the eligible frames of the current document and the
// revision they belong to, plus rejected entries for frames that are
// excluded for a reason the operator should see.
func (s *Site) frames(ctx context.Context) (uint64, []frameInfo, error) {
	c, done := s.sess(ctx, "")
	defer done()
	s.mu.Lock()
	rev := s.rev
	kids := make([]proto.TargetSessionID, 0, len(s.children))
	for sid := range s.children {
		kids = append(kids, sid)
	}
	s.mu.Unlock()
	tree, err := proto.PageGetFrameTree{}.Call(c)
	if err != nil {
		return 0, nil, err
	}
	var out []frameInfo
	seen := map[proto.PageFrameID]bool{} // walked, with its verdict
	top := tree.FrameTree.Frame.SecurityOrigin
	var walk func(cs session, t *proto.PageFrameTree, parentOK bool)
	walk = func(cs session, t *proto.PageFrameTree, parentOK bool) {
		f := t.Frame
		ok := parentOK && s.eligible(cs, c, f, top)
		seen[f.ID] = ok
		s.mu.Lock()
		if cs.sid != "" {
			s.frameSession[f.ID] = cs.sid
		}
		if ok {
			out = append(out, frameInfo{id: f.ID, parent: f.ParentID, origin: f.SecurityOrigin, gen: s.frameGen[f.ID]})
		}
		s.mu.Unlock()
		for _, ch := range t.ChildFrames {
			walk(cs, ch, ok)
		}
	}
	walk(c, tree.FrameTree, true)
	// Out-of-process frames, each in its own session, parents first: a
	// frame whose parent was never seen is not eligible.
	trees := map[proto.TargetSessionID]*proto.PageFrameTree{}
	for _, sid := range kids {
		cs := c
		cs.sid = sid
		if t, err := (proto.PageGetFrameTree{}).Call(cs); err == nil && t.FrameTree != nil && t.FrameTree.Frame != nil {
			trees[sid] = t.FrameTree
		}
	}
	for progress := true; progress && len(trees) > 0; {
		progress = false
		for sid, t := range trees {
			parentOK, known := seen[t.Frame.ParentID]
			if !known {
				continue
			}
			cs := c
			cs.sid = sid
			walk(cs, t, parentOK)
			delete(trees, sid)
			progress = true
		}
	}
	s.mu.Lock()
	same := s.rev == rev
	s.mu.Unlock()
	if !same {
		return 0, nil, errcode.Errorf(errcode.PageChanged, errcode.NextObserve, "the page navigated while its site tools were listed")
	}
	return rev, out, nil
}

// eligible applies design.md §7's frame rule to one frame whose ancestors are
// eligible: the top document and same-origin frames, cross-origin frames
// only with <iframe allow="tools">; Permissions-Policy tools=() excludes.
// c is the frame's own session, owner the page's (where the <iframe> of an
// out-of-process frame lives).
func (s *Site) eligible(c, owner session, f *proto.PageFrame, top string) bool {
	if s.mode == ModeNative {
		// The browser knows the feature: its policy state covers the
		// header, the allow attribute and inheritance.
		allowed, _, err := toolsPolicy(c, f.ID)
		return err == nil && allowed
	}
	s.mu.Lock()
	blocked := s.ppNone[f.ID]
	s.mu.Unlock()
	if blocked {
		return false
	}
	if f.ParentID == "" || f.SecurityOrigin == top {
		return true
	}
	return delegated(owner, f.ID) || (c.sid != "" && delegated(c, f.ID))
}

// delegated reads the owner <iframe>'s allow attribute over CDP (never
// through page script) and looks for the "tools" feature.
func delegated(c session, id proto.PageFrameID) bool {
	owner, err := proto.DOMGetFrameOwner{FrameID: id}.Call(c)
	if err != nil {
		return false
	}
	n, err := proto.DOMDescribeNode{BackendNodeID: owner.BackendNodeID}.Call(c)
	if err != nil || n.Node == nil {
		return false
	}
	a := n.Node.Attributes
	for i := 0; i+1 < len(a); i += 2 {
		if strings.EqualFold(a[i], "allow") {
			for _, d := range strings.Split(a[i+1], ";") {
				if fs := strings.Fields(d); len(fs) > 0 && fs[0] == "tools" {
					return len(fs) == 1 || (len(fs) != 2 || fs[1] != "'none'")
				}
			}
		}
	}
	return false
}

// listing is one discovery pass before sanitizing.
type listing struct {
	rev    uint64
	gens   map[proto.PageFrameID]uint64
	descs  []Descriptor
	broken []Rejected // frames that did not answer
}

func (s *Site) list(ctx context.Context) (*listing, error) {
	rev, frames, err := s.frames(ctx)
	if err != nil {
		return nil, err
	}
	l := &listing{rev: rev, gens: map[proto.PageFrameID]uint64{}}
	for _, f := range frames {
		l.gens[f.id] = f.gen
		ds, err := s.frameDescriptors(ctx, f)
		if err != nil {
			l.broken = append(l.broken, Rejected{Origin: f.origin, Code: errcode.InvalidSiteTool,
				Error: "a frame's tools could not be read"})
			continue
		}
		l.descs = append(l.descs, ds...)
	}
	return l, nil
}

func (s *Site) frameDescriptors(ctx context.Context, f frameInfo) ([]Descriptor, error) {
	if s.mode == ModeNative {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []Descriptor
		for _, t := range s.native[f.id] {
			d := Descriptor{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Origin: f.origin, Frame: string(f.id)}
			if t.Annotations != nil {
				d.Annotations = Annotations{ReadOnlyHint: t.Annotations.ReadOnly, UntrustedContent: t.Annotations.UntrustedContent,
					Consequential: t.Annotations.Consequential}
			}
			out = append(out, d)
		}
		return out, nil
	}
	c, done := s.sess(ctx, "")
	defer done()
	group := "tabwarden-" + randomID()
	c, br, err := s.bridge(c, f.id)
	if err != nil {
		return nil, err
	}
	defer func() { _ = proto.RuntimeReleaseObjectGroup{ObjectGroup: group}.Call(c) }()
	r, err := proto.RuntimeCallFunctionOn{FunctionDeclaration: `function () { return this("list"); }`,
		ObjectID: br, ReturnByValue: true, ObjectGroup: group}.Call(c)
	if err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, errors.New("bridge threw")
	}
	var raw []struct {
		Name        *string      `json:"name"`
		Title       *string      `json:"title"`
		Description *string      `json:"description"`
		InputSchema *string      `json:"inputSchema"`
		Annotations *Annotations `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(r.Result.Value.Str()), &raw); err != nil {
		return nil, err
	}
	var out []Descriptor
	for _, t := range raw {
		d := Descriptor{Origin: f.origin, Frame: string(f.id)}
		if t.Name != nil {
			d.Name = *t.Name
		}
		if t.Title != nil {
			d.Title = *t.Title
		}
		if t.Description != nil {
			d.Description = *t.Description
		}
		if t.InputSchema != nil {
			d.InputSchema = json.RawMessage(*t.InputSchema)
		}
		if t.Annotations != nil {
			d.Annotations = *t.Annotations
		}
		out = append(out, d)
	}
	return out, nil
}

// bridge finds the polyfill's bridge in a frame's main world: document's
// own modelContext property must be a non-configurable, non-writable data
// property (only the polyfill, running before any page script, can have
// made it so), and the bridge is that object's private #bridge field,
// which no script can read. No page code runs on the way: document is an
// unforgeable accessor, and the rest are CDP property reads.
//
// It returns the session the bridge lives in (the frame's), for the calls
// that use the object id. The answer holds for the context's life (the
// property can never change), so it is looked up once per context, not
// once per listing and per call.
func (s *Site) bridge(c session, frame proto.PageFrameID) (session, proto.RuntimeRemoteObjectID, error) {
	s.mu.Lock()
	fc, ok := s.contexts[frame]
	s.mu.Unlock()
	if !ok {
		return c, "", errors.New("frame has no script context")
	}
	if fc.sid != s.main {
		c.sid = fc.sid
	}
	if fc.bridge != "" {
		return c, fc.bridge, nil
	}
	br, err := findBridge(c, fc.id)
	if err != nil {
		return c, "", err
	}
	s.mu.Lock()
	if now, ok := s.contexts[frame]; ok && now.sid == fc.sid && now.id == fc.id {
		now.bridge = br
		s.contexts[frame] = now
	}
	s.mu.Unlock()
	return c, br, nil
}

// findBridge does bridge's property reads in context id, keeping what it
// finds in bridgeGroup (property values join their owner's group).
func findBridge(c session, id proto.RuntimeExecutionContextID) (proto.RuntimeRemoteObjectID, error) {
	doc, err := proto.RuntimeEvaluate{Expression: "document", ContextID: id, ObjectGroup: bridgeGroup}.Call(c)
	if err != nil || doc.ExceptionDetails != nil || doc.Result.ObjectID == "" {
		return "", errors.New("no document")
	}
	props, err := proto.RuntimeGetProperties{ObjectID: doc.Result.ObjectID, OwnProperties: true}.Call(c)
	if err != nil {
		return "", err
	}
	var api proto.RuntimeRemoteObjectID
	for _, p := range props.Result {
		if p.Name == "modelContext" && p.Value != nil && p.Get == nil && !p.Configurable && !p.Writable {
			api = p.Value.ObjectID
		}
	}
	if api == "" {
		return "", errors.New("no polyfill in frame")
	}
	props, err = proto.RuntimeGetProperties{ObjectID: api, OwnProperties: true}.Call(c)
	if err != nil {
		return "", err
	}
	for _, p := range props.PrivateProperties {
		if p.Name == "#bridge" && p.Value != nil && p.Value.ObjectID != "" {
			return p.Value.ObjectID, nil
		}
	}
	return "", errors.New("no bridge in frame")
}
