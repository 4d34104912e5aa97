package agent

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWebUseSpecIsOneTool(t *testing.T) {
	if len(WebUse.Tools) != 1 || WebUse.Tools[0] != webUseTool || webUseTool.Name != "web_use" {
		t.Fatalf("WebUse.Tools = %+v", WebUse.Tools)
	}
	sch, err := webUseTool.InputSchema()
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

// TestAgentLearnsNoTabEndSecondHand: the dispatch learns a tab's end, its
// crash and its take-over from the tab's browser.Handle, which browser
// ends itself; no shipped file of the package follows the engine's tab
// removals or take-overs for that (issue 12).
func TestAgentLearnsNoTabEndSecondHand(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "consent" &&
				(sel.Sel.Name == "EventTabRemoved" || sel.Sel.Name == "EventTakeOver") {
				t.Errorf("%s: consent.%s: learn a tab's end and take-over from its browser.Handle", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked %d files: the check proves nothing", checked)
	}
}
