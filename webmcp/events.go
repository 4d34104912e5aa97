package webmcp

import (
	"context"
	_ "embed"
	"net/http"
	"strings"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// cdpEvent is one session event: its method and a decoder for its params.
// It decouples the pump from rod.Message, whose payload cannot be built
// outside rod (the pure tests feed their own).
type cdpEvent struct {
	SessionID proto.TargetSessionID
	Method    string
	load      func(proto.Event) bool
}

func fromRod(ctx context.Context, in <-chan *rod.Message) <-chan cdpEvent {
	out := make(chan cdpEvent)
	go func() {
		defer close(out)
		for m := range in {
			select {
			case out <- cdpEvent{SessionID: m.SessionID, Method: m.Method, load: loadRod(m)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// loadRod is m's decoder as a cdpEvent's load: false for another event's
// type and for params that do not decode. rod's Message.Load reports a
// failed decode only by panicking (and panics too when another subscriber
// already decoded the shared message into a different type); the recover
// here covers that one call, nothing of what apply does with the result.
func loadRod(m *rod.Message) func(proto.Event) bool {
	return func(e proto.Event) (ok bool) {
		defer func() {
			if recover() != nil {
				ok = false
			}
		}()
		return m.Load(e)
	}
}

// pump applies the session's events to the Site's state. It never blocks
// on anything but the event channel: waiters have a one-slot buffer.
func (s *Site) pump(events <-chan cdpEvent) {
	defer close(s.pumped)
	for {
		select {
		case <-s.ctx.Done():
			s.failWaiters()
			return
		case m, ok := <-events:
			if !ok {
				s.cancel()
				s.failWaiters()
				return
			}
			s.apply(m)
		}
	}
}

func (s *Site) failWaiters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, w := range s.waiters {
		w <- WebMCPToolResponded{InvocationID: id, Status: "Canceled"}
		delete(s.waiters, id)
	}
}

// apply folds one event into the Site's state. An event whose params do
// not decode (load false) is dropped by its case, never fatal to the tab.
func (s *Site) apply(m cdpEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, child := s.children[m.SessionID]
	if m.SessionID != s.main && !child {
		return // another tab's, or the browser's
	}
	switch m.Method {
	case "Target.attachedToTarget":
		var e proto.TargetAttachedToTarget
		if !m.load(&e) || e.TargetInfo == nil {
			return
		}
		if e.TargetInfo.Type != "iframe" {
			go s.letGo(e.SessionID)
			return
		}
		s.children[e.SessionID] = proto.PageFrameID(e.TargetInfo.TargetID)
		s.frameSession[proto.PageFrameID(e.TargetInfo.TargetID)] = e.SessionID
		go s.setupChild(e.SessionID)
	case "Target.detachedFromTarget":
		var e proto.TargetDetachedFromTarget
		if !m.load(&e) {
			return
		}
		delete(s.children, e.SessionID)
		for f, sid := range s.frameSession {
			if sid == e.SessionID {
				s.forgetFrameLocked(f)
			}
		}
	case "WebMCP.toolsAdded":
		var e WebMCPToolsAdded
		if !m.load(&e) {
			return
		}
		for _, t := range e.Tools {
			if child {
				s.frameSession[t.FrameID] = m.SessionID
			}
			list := s.native[t.FrameID]
			replaced := false
			for i := range list {
				if list[i].Name == t.Name {
					list[i], replaced = t, true
				}
			}
			if !replaced {
				list = append(list, t)
			}
			s.native[t.FrameID] = list
		}
	case "WebMCP.toolsRemoved":
		var e WebMCPToolsRemoved
		if !m.load(&e) {
			return
		}
		for _, t := range e.Tools {
			list := s.native[t.FrameID]
			for i := range list {
				if list[i].Name == t.Name {
					s.native[t.FrameID] = append(list[:i:i], list[i+1:]...)
					break
				}
			}
		}
	case "WebMCP.toolResponded":
		var e WebMCPToolResponded
		if !m.load(&e) {
			return
		}
		if w, ok := s.waiters[e.InvocationID]; ok {
			delete(s.waiters, e.InvocationID)
			w <- e
			return
		}
		// The reply to invokeTool may still be on its way to the caller.
		if len(s.early) > 64 {
			clear(s.early)
		}
		s.early[e.InvocationID] = e
	case "Page.frameNavigated":
		var e proto.PageFrameNavigated
		if !m.load(&e) || e.Frame == nil {
			return
		}
		if child {
			s.frameSession[e.Frame.ID] = m.SessionID
		} else if owner, ok := s.frameSession[e.Frame.ID]; ok && owner != m.SessionID {
			delete(s.frameSession, e.Frame.ID) // came back in-process
		}
		if e.Frame.ParentID == "" && m.SessionID == s.main {
			s.rev++
			clear(s.native)
		}
		s.frameGen[e.Frame.ID]++
		delete(s.native, e.Frame.ID)
	case "Page.frameDetached":
		var e proto.PageFrameDetached
		if !m.load(&e) {
			return
		}
		if owner, ok := s.frameSession[e.FrameID]; ok && owner != m.SessionID {
			// A "swap" seen from the old process: the frame lives on in
			// another session, whose events may already have arrived.
			return
		}
		s.forgetFrameLocked(e.FrameID)
	case "Runtime.executionContextCreated":
		var e proto.RuntimeExecutionContextCreated
		if !m.load(&e) || e.Context == nil {
			return
		}
		// auxData is already decoded; read it in place rather than
		// re-encoding it on every context the page creates.
		aux := e.Context.AuxData
		frame, _ := aux["frameId"].Val().(string)
		if aux["isDefault"].Bool() && frame != "" {
			s.contexts[proto.PageFrameID(frame)] = frameContext{sid: m.SessionID, id: e.Context.ID}
			if child {
				s.frameSession[proto.PageFrameID(frame)] = m.SessionID
			}
		}
	case "Runtime.executionContextDestroyed":
		var e proto.RuntimeExecutionContextDestroyed
		if !m.load(&e) {
			return
		}
		for f, fc := range s.contexts {
			if fc.sid == m.SessionID && fc.id == e.ExecutionContextID {
				delete(s.contexts, f)
			}
		}
	case "Runtime.executionContextsCleared":
		for f, fc := range s.contexts {
			if fc.sid == m.SessionID {
				delete(s.contexts, f)
			}
		}
	case "Network.responseReceived":
		var e proto.NetworkResponseReceived
		if !m.load(&e) || e.Type != proto.NetworkResourceTypeDocument || e.FrameID == "" || e.Response == nil {
			return
		}
		h := http.Header{}
		for k, v := range e.Response.Headers {
			h.Add(k, v.Str())
		}
		s.ppNone[e.FrameID] = toolsDisallowed(h.Values("Permissions-Policy"))
	}
}

// forgetFrameLocked drops a frame that went away: its handles go stale
// (a new generation) and its tools, context and session are forgotten.
func (s *Site) forgetFrameLocked(f proto.PageFrameID) {
	s.frameGen[f]++
	delete(s.native, f)
	delete(s.contexts, f)
	delete(s.frameSession, f)
}

// toolsDisallowed reports whether a Permissions-Policy header value turns
// the "tools" feature off for the document ("tools=()"). Only the empty
// allowlist matters here: every frame we consider is either the top
// document or same-origin with it or explicitly delegated.
func toolsDisallowed(values []string) bool {
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			k, list, ok := strings.Cut(strings.TrimSpace(item), "=")
			if ok && strings.TrimSpace(k) == "tools" && strings.ReplaceAll(list, " ", "") == "()" {
				return true
			}
		}
	}
	return false
}
