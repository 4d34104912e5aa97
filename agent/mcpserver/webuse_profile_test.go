package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
)

// --tools web_use publishes exactly the one tool, with instructions that
// name it rather than the default surface's tools.
func TestWebUseProfilePublishesOneTool(t *testing.T) {
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	s, err := New(Config{Surface: newFakeSurface(), Engine: eng, Version: "test",
		Tools: agent.WebUseSpecs, Instructions: agent.WebUseInstructions})
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cs := connect(t, url, s.DefaultToken().Secret, statefulVersion, "web-use")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "web_use" {
		t.Fatalf("tools = %+v, want web_use only", res.Tools)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "web_use") || strings.Contains(ins, "browser_tabs") {
		t.Errorf("instructions = %q", ins)
	}
}
