// Package llm is the built-in agent's one door to a language model
// (design.md §12): a small interface of ours, Model, and its implementation on
// charm.land/fantasy for OpenAI-compatible chat-completions endpoints and
// Anthropic's messages API. No provider HTTP is written here; the library's
// official SDK clients speak the wire.
//
// The package knows nothing of browsers or gates. It carries a screenshot
// only as bytes inside one Request, never logs or stores it.
package llm

import (
	"context"
	"encoding/json"
)

// Role is who a Message is from.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation sent to the model.
type Message struct {
	Role Role
	// Text is the user's or the assistant's text.
	Text string
	// ToolCalls are the assistant's calls (RoleAssistant).
	ToolCalls []ToolCall
	// Result answers one call (RoleTool).
	Result *ToolResult
}

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// ToolResult is a tool's answer as the model reads it.
type ToolResult struct {
	CallID string
	// Text is the tool's JSON envelope.
	Text string
	// IsError marks a failure envelope (isError:true).
	IsError bool
	// Image is a PNG the model sees in this request only (nil: none).
	Image []byte
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments object.
	Schema map[string]any
}

// Request is one provider request.
type Request struct {
	System   string
	Messages []Message
	Tools    []Tool
	// MaxOutputTokens caps the answer; 0: the provider's default.
	MaxOutputTokens int64
}

// Usage counts the tokens of one turn.
type Usage struct {
	Input, Output int64
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.Input + u.Output }

// Turn is the model's answer to a Request.
type Turn struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
	// Finish is the provider's finish reason ("stop", "tool-calls", …).
	Finish string
}

// Model is a language model behind one provider setup.
type Model interface {
	// Turn sends req and returns the whole answer. onText, when not nil,
	// receives the answer's text as it streams in. A provider error that
	// is safe to retry is retried inside Turn (the request has no effect
	// outside the provider); errors it returns are final.
	Turn(ctx context.Context, req Request, onText func(string)) (Turn, error)
	// Name is "provider/model" for the screen and the audit.
	Name() string
	// Vision reports whether the model accepts image input.
	Vision() bool
	// Price is the cost per million input and output tokens in US dollars,
	// ok false when unknown.
	Price() (in, out float64, ok bool)
}
