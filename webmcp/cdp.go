package webmcp

import (
	"context"
	"encoding/json"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Page is the CDP surface of one tab that webmcp needs. *rod.Page
// satisfies it; so does any flat-session client that can also deliver the
// session's events.
type Page interface {
	Call(ctx context.Context, sessionID, method string, params any) ([]byte, error)
	GetSessionID() proto.TargetSessionID
	// Event delivers the events of the page's session until the page's
	// context ends.
	Event() <-chan *rod.Message
}

var _ Page = (*rod.Page)(nil)

// caller is the command half of Page.
type caller interface {
	Call(ctx context.Context, sessionID, method string, params any) ([]byte, error)
	GetSessionID() proto.TargetSessionID
}

// session is a proto.Client bound to one page session and one deadline, so
// rod's generated types and ours are called the same way.
type session struct {
	p   caller
	ctx context.Context
	sid proto.TargetSessionID // "" = the page's own session
}

func (s session) Call(ctx context.Context, sid, method string, params any) ([]byte, error) {
	return s.p.Call(ctx, sid, method, params)
}
func (s session) GetContext() context.Context { return s.ctx }
func (s session) GetSessionID() proto.TargetSessionID {
	if s.sid != "" {
		return s.sid
	}
	return s.p.GetSessionID()
}

// call sends req with res decoded from the reply; the shape of rod's own
// unexported proto.call, which our WebMCP types cannot reach.
func call(method string, req, res any, c proto.Client) error {
	ctx := context.Background()
	if cc, ok := c.(proto.Contextable); ok {
		ctx = cc.GetContext()
	}
	sid := ""
	if sc, ok := c.(proto.Sessionable); ok {
		sid = string(sc.GetSessionID())
	}
	b, err := c.Call(ctx, sid, method, req)
	if err != nil {
		return err
	}
	if res == nil {
		return nil
	}
	return json.Unmarshal(b, res)
}

// The WebMCP domain of Chromium ≥ 156 (experimental; rod's lib/proto has
// no types for it). Only the fields we read are declared.

// WebMCPEnable starts toolsAdded/toolsRemoved events; enabling replays a
// toolsAdded for every tool already registered.
type WebMCPEnable struct{}

func (m WebMCPEnable) ProtoReq() string          { return "WebMCP.enable" }
func (m WebMCPEnable) Call(c proto.Client) error { return call(m.ProtoReq(), m, nil, c) }

// WebMCPDisable stops the domain's events.
type WebMCPDisable struct{}

func (m WebMCPDisable) ProtoReq() string          { return "WebMCP.disable" }
func (m WebMCPDisable) Call(c proto.Client) error { return call(m.ProtoReq(), m, nil, c) }

// WebMCPInvokeTool runs a registered tool in a frame.
type WebMCPInvokeTool struct {
	FrameID  proto.PageFrameID `json:"frameId"`
	ToolName string            `json:"toolName"`
	Input    json.RawMessage   `json:"input"`
}

// WebMCPInvokeToolResult carries the id that toolResponded will name. The
// reply is sent before any event of the invocation.
type WebMCPInvokeToolResult struct {
	InvocationID string `json:"invocationId"`
}

func (m WebMCPInvokeTool) ProtoReq() string { return "WebMCP.invokeTool" }
func (m WebMCPInvokeTool) Call(c proto.Client) (*WebMCPInvokeToolResult, error) {
	var res WebMCPInvokeToolResult
	return &res, call(m.ProtoReq(), m, &res, c)
}

// WebMCPCancelInvocation cancels a pending invocation; the page sees a
// toolcancel event and toolResponded reports Canceled.
type WebMCPCancelInvocation struct {
	InvocationID string `json:"invocationId"`
}

func (m WebMCPCancelInvocation) ProtoReq() string          { return "WebMCP.cancelInvocation" }
func (m WebMCPCancelInvocation) Call(c proto.Client) error { return call(m.ProtoReq(), m, nil, c) }

// WebMCPAnnotation is the native annotation set.
type WebMCPAnnotation struct {
	ReadOnly         bool `json:"readOnly,omitempty"`
	UntrustedContent bool `json:"untrustedContent,omitempty"`
	Consequential    bool `json:"consequential,omitempty"`
}

// WebMCPTool is one registration as the browser reports it.
type WebMCPTool struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	InputSchema json.RawMessage   `json:"inputSchema,omitempty"`
	Annotations *WebMCPAnnotation `json:"annotations,omitempty"`
	FrameID     proto.PageFrameID `json:"frameId"`
}

// WebMCPToolsAdded is sent for new registrations (and for all of them on enable).
type WebMCPToolsAdded struct {
	Tools []WebMCPTool `json:"tools"`
}

func (e WebMCPToolsAdded) ProtoEvent() string { return "WebMCP.toolsAdded" }

// WebMCPRemovedTool names a registration that went away.
type WebMCPRemovedTool struct {
	Name    string            `json:"name"`
	FrameID proto.PageFrameID `json:"frameId"`
}

// WebMCPToolsRemoved is sent when registrations go away (abort signal,
// frame teardown).
type WebMCPToolsRemoved struct {
	Tools []WebMCPRemovedTool `json:"tools"`
}

func (e WebMCPToolsRemoved) ProtoEvent() string { return "WebMCP.toolsRemoved" }

// WebMCPToolResponded ends an invocation: Status is Completed, Canceled or
// Error; Output is present only when Completed. Output is site content.
type WebMCPToolResponded struct {
	InvocationID string          `json:"invocationId"`
	Status       string          `json:"status"`
	Output       json.RawMessage `json:"output,omitempty"`
	ErrorText    string          `json:"errorText,omitempty"`
}

func (e WebMCPToolResponded) ProtoEvent() string { return "WebMCP.toolResponded" }
