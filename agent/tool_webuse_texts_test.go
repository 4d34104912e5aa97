package agent

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestWebUseTextsNameOnlyItsCommands is issue 11's acceptance for the
// profile's texts: its description, instructions and schema name none of
// the default profile's tools (taken from Default), every command they tell
// the agent to call is one of webUseCommands, and every next the profile
// can return — each Next constant of the consent package (read from its
// source) and each "next" literal of this package's code — comes out as
// one of webUseCommands.
func TestWebUseTextsNameOnlyItsCommands(t *testing.T) {
	spec := webUseTool
	sch, err := spec.InputSchema()
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(sch)
	texts := map[string]string{"description": spec.Description, "instructions": webUseInstructions, "schema": string(schema)}
	for _, s := range Default.Tools {
		if s.Name == "web_use" {
			continue
		}
		for what, text := range texts {
			if strings.Contains(text, s.Name) {
				t.Errorf("web_use %s names %s, which the profile does not have", what, s.Name)
			}
		}
	}
	for what, text := range texts {
		for _, m := range regexp.MustCompile(`\bcall (\w+)`).FindAllStringSubmatch(text, -1) {
			if !slices.Contains(webUseCommands, m[1]) {
				t.Errorf("web_use %s says to call %q, not a web_use command", what, m[1])
			}
		}
	}
	var enum struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &enum); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(enum.Properties["command"].Enum, webUseCommands) {
		t.Errorf("schema commands %v, dispatch commands %v", enum.Properties["command"].Enum, webUseCommands)
	}

	nexts := map[string]string{}
	fset := token.NewFileSet()
	consentFiles, _ := filepath.Glob("../consent/*.go")
	codeFiles, _ := filepath.Glob("../consent/errcode/*.go")
	agentFiles, _ := filepath.Glob("*.go")
	for _, path := range slices.Concat(consentFiles, codeFiles, agentFiles) {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec: // const NextX Next = "..."
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "Next" {
					for i, v := range n.Values {
						if lit, ok := v.(*ast.BasicLit); ok {
							s, _ := strconv.Unquote(lit.Value)
							nexts[s] = fset.Position(n.Names[i].Pos()).String()
						}
					}
				}
			case *ast.KeyValueExpr: // "next": "..."
				if k, ok := n.Key.(*ast.BasicLit); ok && k.Value == `"next"` {
					if lit, ok := n.Value.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						nexts[s] = fset.Position(lit.Pos()).String()
					}
				}
			}
			return true
		})
	}
	if len(nexts) < 6 {
		t.Fatalf("found only %d next values: %v", len(nexts), nexts)
	}
	for n, where := range nexts {
		got := webUseResult(Result{Object: map[string]any{"next": n}}).Object["next"].(string)
		if got != "" && !slices.Contains(webUseCommands, got) {
			t.Errorf("next %q (%s) reaches web_use as %q, not one of %v", n, where, got, webUseCommands)
		}
	}
	// Messages of the shared tools come out in this profile's words.
	for _, s := range Default.Tools {
		if s.Name == "web_use" {
			continue
		}
		msg := webUseResult(Result{Object: map[string]any{"error": "call " + s.Name + " first"}}).Object["error"].(string)
		if strings.Contains(msg, s.Name) && !slices.Contains([]string{"browser_batch", "browser_job", "browser_upload", "webmcp_list_tools", "webmcp_call_tool"}, s.Name) {
			t.Errorf("a message naming %s reaches web_use as %q", s.Name, msg)
		}
	}
}
