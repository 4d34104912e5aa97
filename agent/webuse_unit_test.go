package agent

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestWebUseSpecIsOneTool(t *testing.T) {
	if len(WebUseSpecs) != 1 || WebUseSpecs[0].Name != "web_use" {
		t.Fatalf("WebUseSpecs = %+v", WebUseSpecs)
	}
	sch, err := WebUseSpecs[0].InputSchema()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sch)
	var m struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type string `json:"type"`
			Enum []any  `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Required, []string{"command"}) {
		t.Errorf("required = %v", m.Required)
	}
	if len(m.Properties["command"].Enum) != len(webUseCommands) || m.Properties["arguments"].Type != "object" {
		t.Errorf("schema = %s", b)
	}
}
