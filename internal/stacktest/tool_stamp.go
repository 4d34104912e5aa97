package stacktest

import (
	"context"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
)

// StampArgs and StampTool are a whole tool, written as docs/dev.md says a
// new tool is: this file alone, plus its one registration line in a
// profile's list (StampProfile, profile.go). TestAToolIsOneValue shows the
// MCP server publishing it with the schema of StampArgs, the dispatcher
// routing it and the audit recording it, with no other file touched.
type StampArgs struct {
	Text string `json:"text" jsonschema:"the text to stamp"`
}

// StampTool answers the text it was given, stamped, and the conversation
// that called it.
var StampTool = agent.NewTool(agent.ToolSpec{
	Name:        "test_stamp",
	Title:       "Stamp a text",
	Description: "Answers the text it was given, stamped.",
	ReadOnly:    true,
}, func(_ *agent.Dispatcher, _ context.Context, conv consent.ConversationID, a StampArgs) (agent.Result, consent.TabID) {
	return agent.Result{Object: map[string]any{"ok": true, "stamped": "[" + a.Text + "]", "conversation": string(conv)}}, ""
})
