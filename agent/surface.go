package agent

import (
	"context"
	"encoding/json"

	"github.com/tabwarden/tabwarden/consent"
)

// Surface is the engine's tool surface as transports see it: the MCP server,
// the stdio relay's far end, the demo agent and the built-in agent all call
// it the same way. The conversation always comes from the caller's transport
// identity, never from args.
type Surface interface {
	Call(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) Result
}

// SurfaceFunc adapts a function to Surface.
type SurfaceFunc func(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) Result

func (f SurfaceFunc) Call(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) Result {
	return f(ctx, conv, tool, args)
}
