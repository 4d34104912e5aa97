// Package mcptest reads tool results in tests the way an agent's host
// does: from their text.
package mcptest

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Object is the design.md §5 object a tool result carries as its JSON
// text; nil when its first text content is missing or not a JSON object.
func Object(res *mcp.CallToolResult) map[string]any {
	if res == nil {
		return nil
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			var m map[string]any
			if json.Unmarshal([]byte(t.Text), &m) != nil {
				return nil
			}
			return m
		}
	}
	return nil
}
