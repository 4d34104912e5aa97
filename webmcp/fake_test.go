package webmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/go-rod/rod/lib/proto"
)

// fakePage is a scripted native-WebMCP tab for the pure broker tests: a
// frame tree, a permissions-policy answer per frame, and invocations that
// answer the way each test says.
type fakePage struct {
	mu      sync.Mutex
	events  chan cdpEvent
	done    chan struct{} // closed when the test ends; emits stop
	frames  []fakeFrame
	allowed map[proto.PageFrameID]bool
	invokes []WebMCPInvokeTool
	cancels []string
	nextID  int
	// answer decides an invocation's toolResponded; nil result = hold
	// until cancelInvocation. sync = answer before invokeTool returns.
	answer func(WebMCPInvokeTool) (resp *WebMCPToolResponded, sync bool)
}

type fakeFrame struct {
	id, parent proto.PageFrameID
	origin     string
}

func newFakePage() *fakePage {
	return &fakePage{
		events:  make(chan cdpEvent),
		done:    make(chan struct{}),
		frames:  []fakeFrame{{id: "F1", origin: "http://127.0.0.1:1"}},
		allowed: map[proto.PageFrameID]bool{"F1": true},
	}
}

func (f *fakePage) GetSessionID() proto.TargetSessionID { return "S1" }

func (f *fakePage) Call(ctx context.Context, _ string, method string, params any) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case "Page.enable", "WebMCP.enable", "Target.setAutoAttach":
		return []byte(`{}`), nil
	case "Page.getFrameTree":
		return json.Marshal(map[string]any{"frameTree": f.treeLocked("")})
	case "Page.getPermissionsPolicyState":
		id := params.(proto.PageGetPermissionsPolicyState).FrameID
		return json.Marshal(map[string]any{"states": []map[string]any{{"feature": "tools", "allowed": f.allowed[id]}}})
	case "WebMCP.invokeTool":
		inv := params.(WebMCPInvokeTool)
		f.invokes = append(f.invokes, inv)
		f.nextID++
		id := fmt.Sprintf("inv-%d", f.nextID)
		if f.answer != nil {
			if resp, sync := f.answer(inv); resp != nil {
				resp.InvocationID = id
				if sync {
					f.mu.Unlock()
					f.emit("WebMCP.toolResponded", resp)
					f.mu.Lock()
				} else {
					go f.emit("WebMCP.toolResponded", resp)
				}
			}
		}
		return json.Marshal(WebMCPInvokeToolResult{InvocationID: id})
	case "WebMCP.cancelInvocation":
		id := params.(WebMCPCancelInvocation).InvocationID
		f.cancels = append(f.cancels, id)
		go f.emit("WebMCP.toolResponded", WebMCPToolResponded{InvocationID: id, Status: "Canceled"})
		return []byte(`{}`), nil
	}
	return nil, fmt.Errorf("fake: unexpected %s", method)
}

func (f *fakePage) treeLocked(parent proto.PageFrameID) map[string]any {
	for _, fr := range f.frames {
		if fr.parent == parent {
			return f.subtreeLocked(fr)
		}
	}
	return nil
}

func (f *fakePage) subtreeLocked(fr fakeFrame) map[string]any {
	node := map[string]any{"frame": map[string]any{"id": fr.id, "parentId": fr.parent, "securityOrigin": fr.origin, "url": fr.origin + "/"}}
	var children []map[string]any
	for _, k := range f.frames {
		if k.parent == fr.id {
			children = append(children, f.subtreeLocked(k))
		}
	}
	node["childFrames"] = children
	return node
}

// emit delivers one event and returns once the pump has applied it: the
// events channel is unbuffered, so the barrier's send completes only after
// the pump finished the event before it.
func (f *fakePage) emit(method string, params any) {
	b, _ := json.Marshal(params)
	for _, ev := range []cdpEvent{
		{SessionID: "S1", Method: method, load: func(e proto.Event) bool { return e.ProtoEvent() == method && json.Unmarshal(b, e) == nil }},
		{SessionID: "S1", Method: "Test.barrier", load: func(proto.Event) bool { return false }},
	} {
		select {
		case f.events <- ev:
		case <-f.done:
			return
		}
	}
}

func (f *fakePage) addTools(tools ...WebMCPTool) {
	f.emit("WebMCP.toolsAdded", WebMCPToolsAdded{Tools: tools})
}

func (f *fakePage) counts() (invokes, cancels int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.invokes), len(f.cancels)
}

func attachFake(f *fakePage) (*Site, error) {
	sctx, cancel := context.WithCancel(context.Background())
	return attach(context.Background(), f, f.events, ModeNative, sctx, cancel)
}
