package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// --tools web_use publishes exactly the one tool, with instructions that
// name it rather than the default surface's tools.
func TestWebUseProfilePublishesOneTool(t *testing.T) {
	ts := startServerWith(t, func(c *Config) { c.Profile = agent.WebUse })
	webUse, tabs := agent.WebUse.Tools[0].Name, agent.Default.Tools[0].Name
	cs := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "web-use")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != webUse {
		t.Fatalf("tools = %+v, want web_use only", res.Tools)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, webUse) || strings.Contains(ins, tabs) {
		t.Errorf("instructions = %q", ins)
	}
}
