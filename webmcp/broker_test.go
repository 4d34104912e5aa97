package webmcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

type pureRig struct {
	t    *testing.T
	f    *fakePage
	site *Site
	b    *Broker
}

const (
	convA consent.ConversationID = "conv-a"
	tabA  consent.TabID          = "tab-a"
)

func newPureRig(t *testing.T, opts Options) *pureRig {
	t.Helper()
	f := newFakePage()
	s, err := attachFake(f)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBroker(opts)
	b.AddTab(convA, tabA, s)
	t.Cleanup(func() { b.RemoveTab(tabA); close(f.done) })
	return &pureRig{t: t, f: f, site: s, b: b}
}

func (r *pureRig) list() *Listing {
	r.t.Helper()
	l, err := r.b.List(context.Background(), convA, tabA)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

func tool(name, desc, schema string, frame proto.PageFrameID) WebMCPTool {
	return WebMCPTool{Name: name, Description: desc, InputSchema: json.RawMessage(schema), FrameID: frame}
}

func TestBrokerListing(t *testing.T) {
	r := newPureRig(t, Options{})
	r.f.mu.Lock()
	r.f.frames = append(r.f.frames,
		fakeFrame{id: "F2", parent: "F1", origin: "http://127.0.0.1:1"},
		fakeFrame{id: "F3", parent: "F1", origin: "http://localhost:2"}, // not delegated
		fakeFrame{id: "F4", parent: "F3", origin: "http://localhost:2"}, // allowed, but under an excluded frame
	)
	r.f.allowed["F2"], r.f.allowed["F4"] = true, true
	r.f.mu.Unlock()
	r.f.addTools(
		tool("read_status", "Reads", `{"type":"object"}`, "F1"),
		tool("bad", "Bad", `{"type":"object","properties":{"q":{"type":"string","pattern":"a"}}}`, "F1"),
		tool("in_frame", "Frame tool", ``, "F2"),
		tool("excluded", "Excluded", ``, "F3"),
		tool("nested", "Nested", ``, "F4"),
	)
	l := r.list()
	got := names(l)
	if strings.Join(got, ",") != "read_status,in_frame" {
		t.Fatalf("listed %v", got)
	}
	if len(l.RejectedTools) != 1 || !hasRejected(l, "bad", errcode.UnsupportedSchema) {
		t.Fatalf("rejected %+v", l.RejectedTools)
	}
	if l.Support.Mode != ModeNative {
		t.Fatalf("support %+v", l.Support)
	}
	b, _ := json.Marshal(l)
	if !strings.Contains(string(b), `"rejectedTools":[{"name":"bad","origin":"http://127.0.0.1:1","code":"unsupported_schema"`) {
		t.Fatalf("wire form %s", b)
	}
	if again := r.list(); again.Tools[0].ToolID != l.Tools[0].ToolID {
		t.Fatal("a second listing changed the toolId of an unchanged tool")
	}
	if _, err := r.b.List(context.Background(), "conv-b", tabA); codeOf(err) != errcode.WrongConversation {
		t.Fatalf("foreign list: %v", err)
	}
	if _, err := r.b.List(context.Background(), convA, "nope"); codeOf(err) != errcode.TabClosed {
		t.Fatalf("unknown tab: %v", err)
	}
}

func TestBrokerStaleHandles(t *testing.T) {
	ctx := context.Background()
	type step struct {
		name   string
		change func(r *pureRig)
	}
	for _, s := range []step{
		{"unregistered", func(r *pureRig) {
			r.f.emit("WebMCP.toolsRemoved", WebMCPToolsRemoved{Tools: []WebMCPRemovedTool{{Name: "t", FrameID: "F2"}}})
		}},
		{"descriptor changed", func(r *pureRig) { r.f.addTools(tool("t", "something else now", "", "F2")) }},
		{"schema changed", func(r *pureRig) { r.f.addTools(tool("t", "does t", `{"type":"object","required":["x"]}`, "F2")) }},
		{"frame navigated", func(r *pureRig) {
			r.f.emit("Page.frameNavigated", proto.PageFrameNavigated{Frame: &proto.PageFrame{ID: "F2", ParentID: "F1"}})
			r.f.addTools(tool("t", "does t", "", "F2")) // same descriptor, new document
		}},
		{"frame detached", func(r *pureRig) { r.f.emit("Page.frameDetached", proto.PageFrameDetached{FrameID: "F2"}) }},
		{"page navigated", func(r *pureRig) {
			r.f.emit("Page.frameNavigated", proto.PageFrameNavigated{Frame: &proto.PageFrame{ID: "F1"}})
			r.f.addTools(tool("t", "does t", "", "F2"))
		}},
	} {
		t.Run(s.name, func(t *testing.T) {
			r := newPureRig(t, Options{})
			r.f.mu.Lock()
			r.f.frames = append(r.f.frames, fakeFrame{id: "F2", parent: "F1", origin: "http://127.0.0.1:1"})
			r.f.allowed["F2"] = true
			r.f.mu.Unlock()
			r.f.addTools(tool("t", "does t", "", "F2"))
			id := r.list().Tools[0].ToolID
			c, err := r.b.Prepare(ctx, convA, tabA, id, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.change(r)
			if err := c.Fresh(); codeOf(err) != errcode.StaleTool {
				t.Fatalf("Fresh: %v", err)
			}
			if _, err := r.b.Prepare(ctx, convA, tabA, id, nil); codeOf(err) != errcode.StaleTool {
				t.Fatalf("Prepare: %v", err)
			}
			if _, err := c.Invoke(ctx); codeOf(err) != errcode.StaleTool {
				t.Fatalf("Invoke: %v", err)
			}
			if n, _ := r.f.counts(); n != 0 {
				t.Fatalf("%d invocations reached the page", n)
			}
		})
	}
}

func TestBrokerForeignAndUnknown(t *testing.T) {
	ctx := context.Background()
	r := newPureRig(t, Options{})
	r.f.addTools(tool("t", "does t", "", "F1"))
	id := r.list().Tools[0].ToolID
	for name, c := range map[string]struct {
		conv consent.ConversationID
		tab  consent.TabID
		id   string
		code errcode.Code
	}{
		"foreign":     {"conv-b", "", id, errcode.WrongConversation},
		"foreign tab": {"conv-b", tabA, id, errcode.WrongConversation},
		"unknown":     {convA, "", "wt_0000", errcode.StaleTool},
		"other tab":   {convA, "tab-z", id, errcode.StaleTool},
	} {
		if _, err := r.b.Prepare(ctx, c.conv, c.tab, c.id, nil); codeOf(err) != c.code {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := r.b.Prepare(ctx, convA, "", id, nil); err != nil {
		t.Fatalf("tab omitted: %v", err)
	}
	r.b.RemoveTab(tabA)
	if _, err := r.b.Prepare(ctx, convA, "", id, nil); codeOf(err) != errcode.StaleTool {
		t.Fatalf("after RemoveTab: %v", err)
	}
}

func TestBrokerInvokeResults(t *testing.T) {
	ctx := context.Background()
	r := newPureRig(t, Options{})
	big := `"` + strings.Repeat("x", MaxResultBytes) + `"`
	r.f.answer = func(inv WebMCPInvokeTool) (*WebMCPToolResponded, bool) {
		switch inv.ToolName {
		case "echo":
			return &WebMCPToolResponded{Status: "Completed", Output: inv.Input}, true // before invokeTool returns
		case "big":
			return &WebMCPToolResponded{Status: "Completed", Output: json.RawMessage(big)}, false
		case "throws":
			return &WebMCPToolResponded{Status: "Error", ErrorText: "SITE-SECRET stack"}, false
		case "void":
			return &WebMCPToolResponded{Status: "Completed"}, false
		}
		return nil, false
	}
	r.f.addTools(
		tool("echo", "Echo", `{"type":"object","properties":{"a":{"type":"integer"}}}`, "F1"),
		tool("big", "Big", "", "F1"), tool("throws", "Throws", "", "F1"), tool("void", "Void", "", "F1"))
	l := r.list()
	call := func(name, in string) (json.RawMessage, error) {
		c, err := r.b.Prepare(ctx, convA, tabA, toolID(t, l, name), json.RawMessage(in))
		if err != nil {
			return nil, err
		}
		return c.Invoke(ctx)
	}
	if res, err := call("echo", `{"a": 7}`); err != nil || string(res) != `{"a":7}` {
		t.Fatalf("echo %s %v", res, err)
	}
	if _, err := call("echo", `{"a": "x"}`); codeOf(err) != errcode.InvalidInput {
		t.Fatalf("invalid input: %v", err)
	}
	if n, _ := r.f.counts(); n != 1 {
		t.Fatalf("%d invocations; invalid input must not reach the page", n)
	}
	if _, err := call("big", ""); codeOf(err) != errcode.ResultTooLarge {
		t.Fatalf("big: %v", err)
	}
	_, err := call("throws", "")
	var ce *errcode.Error
	if codeOf(err) != errcode.BrowserOperationFailed || !asError(err, &ce) || !ce.Dispatched || strings.Contains(err.Error(), "SITE-SECRET") {
		t.Fatalf("throws: %#v", err)
	}
	if res, err := call("void", ""); err != nil || string(res) != "null" {
		t.Fatalf("void %s %v", res, err)
	}
}

func TestBrokerConcurrencyAndCancel(t *testing.T) {
	ctx := context.Background()
	r := newPureRig(t, Options{})
	r.f.addTools(tool("hold", "Holds until cancelled", "", "F1"))
	id := r.list().Tools[0].ToolID
	errs := make(chan error, 4)
	started := make(chan struct{}, 4)
	r.f.answer = func(WebMCPInvokeTool) (*WebMCPToolResponded, bool) {
		started <- struct{}{}
		return nil, false
	}
	for i := 0; i < 4; i++ {
		c, err := r.b.Prepare(ctx, convA, tabA, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, err := c.Invoke(ctx); errs <- err }()
	}
	for i := 0; i < 4; i++ {
		<-started
	}
	c, err := r.b.Prepare(ctx, convA, tabA, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(ctx); codeOf(err) != errcode.TooManyRequests {
		t.Fatalf("fifth: %v", err)
	}
	if n, _ := r.f.counts(); n != 4 {
		t.Fatalf("%d invocations reached the page", n)
	}
	r.b.CancelConversation(convA)
	for i := 0; i < 4; i++ {
		if err := <-errs; codeOf(err) != errcode.Canceled {
			t.Fatalf("cancelled: %v", err)
		}
	}
	if _, n := r.f.counts(); n != 4 {
		t.Fatalf("%d in-page cancellations, want 4", n)
	}
}

func TestBrokerExecutionTimeout(t *testing.T) {
	r := newPureRig(t, Options{ExecTimeout: 20 * time.Millisecond})
	r.f.addTools(tool("hold", "Holds until cancelled", "", "F1"))
	c, err := r.b.Prepare(context.Background(), convA, tabA, r.list().Tools[0].ToolID, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Invoke(context.Background())
	var ce *errcode.Error
	if codeOf(err) != errcode.ExecutionTimeout || !asError(err, &ce) || !ce.Dispatched || !ce.MayHaveChangedState {
		t.Fatalf("%#v", err)
	}
	if _, n := r.f.counts(); n != 1 {
		t.Fatalf("%d in-page cancellations", n)
	}
}

func TestBrokerRemoveTabCancels(t *testing.T) {
	r := newPureRig(t, Options{})
	r.f.addTools(tool("hold", "Holds until cancelled", "", "F1"))
	started := make(chan struct{}, 1)
	r.f.answer = func(WebMCPInvokeTool) (*WebMCPToolResponded, bool) { started <- struct{}{}; return nil, false }
	c, err := r.b.Prepare(context.Background(), convA, tabA, r.list().Tools[0].ToolID, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { _, err := c.Invoke(context.Background()); errs <- err }()
	<-started
	r.b.RemoveTab(tabA)
	if err := <-errs; codeOf(err) != errcode.Canceled {
		t.Fatalf("%v", err)
	}
}
