package agent

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

var updateToolsDoc = flag.Bool("update", false, "rewrite docs/tools.md from the tool values")

const toolsDocPath = "../docs/tools.md"

// TestToolsDocIsCurrent: docs/tools.md is generated from the tool values
// (their texts and inferred schemas); it fails when a tool changed and the
// page did not. Regenerate with: go test ./agent -run TestToolsDocIsCurrent -update
func TestToolsDocIsCurrent(t *testing.T) {
	want, err := toolsDoc()
	if err != nil {
		t.Fatal(err)
	}
	if *updateToolsDoc {
		if err := os.WriteFile(toolsDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(toolsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("docs/tools.md is stale: run go test ./agent -run TestToolsDocIsCurrent -update")
	}
}

// toolsDoc renders every profile's tools: texts, annotations and arguments.
func toolsDoc() (string, error) {
	var b strings.Builder
	b.WriteString("<!-- Generated from the tool values in agent/tool_*.go by\n" +
		"     go test ./agent -run TestToolsDocIsCurrent -update\n" +
		"     Do not edit by hand: the test fails when this page is stale. -->\n\n")
	b.WriteString("# Tools\n\n")
	b.WriteString("The tools an agent sees, by profile (`tabwarden --tools NAME`). Every failure is the\n" +
		"envelope of docs/design.md with its code; every call is gated and audited as that page says.\n")
	for _, p := range Profiles {
		fmt.Fprintf(&b, "\n## Profile `%s`\n\n", p.Name)
		fmt.Fprintf(&b, "Server instructions:\n\n> %s\n", p.Instructions)
		for _, tool := range p.Tools {
			if err := toolDoc(&b, tool); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

func toolDoc(b *strings.Builder, tool *Tool) error {
	fmt.Fprintf(b, "\n### `%s`: %s\n\n", tool.Name, tool.Title)
	if tool.ReadOnly {
		b.WriteString("Read-only hint: yes (advisory; the console still gates it).\n\n")
	}
	b.WriteString(tool.Description + "\n")
	schema, err := tool.InputSchema()
	if err != nil {
		return err
	}
	rows := argRows(schema, "")
	if len(rows) == 0 {
		b.WriteString("\nNo arguments.\n")
		return nil
	}
	b.WriteString("\n| argument | type | required | meaning |\n|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	return nil
}

// argRows lists s's properties (nested objects' too, as a.b), sorted.
func argRows(s *jsonschema.Schema, prefix string) []string {
	var rows []string
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := s.Properties[name]
		typ := p.Type
		if typ == "array" && p.Items != nil {
			typ = "array of " + p.Items.Type
		}
		meaning := p.Description
		if len(p.Enum) > 0 {
			var vs []string
			for _, v := range p.Enum {
				vs = append(vs, fmt.Sprint(v))
			}
			meaning += " (one of: " + strings.Join(vs, ", ") + ")"
		}
		// A limit the description already states is not said twice.
		if p.Minimum != nil && p.Maximum != nil && !strings.Contains(meaning, fmt.Sprintf("%v to %v", *p.Minimum, *p.Maximum)) {
			meaning += fmt.Sprintf(" (%v to %v)", *p.Minimum, *p.Maximum)
		}
		if p.MaxLength != nil && !strings.Contains(meaning, fmt.Sprintf("at most %d", *p.MaxLength)) {
			meaning += fmt.Sprintf(" (at most %d characters)", *p.MaxLength)
		}
		if p.MinItems != nil && p.MaxItems != nil {
			meaning += fmt.Sprintf(" (%d to %d items)", *p.MinItems, *p.MaxItems)
		}
		req := ""
		if slices.Contains(s.Required, name) {
			req = "yes"
		}
		rows = append(rows, fmt.Sprintf("| `%s%s` | %s | %s | %s |", prefix, name, typ, req, strings.ReplaceAll(strings.TrimSpace(meaning), "|", "\\|")))
		if len(p.Properties) > 0 {
			rows = append(rows, argRows(p, prefix+name+".")...)
		}
		if p.Items != nil && len(p.Items.Properties) > 0 {
			rows = append(rows, argRows(p.Items, prefix+name+"[].")...)
		}
	}
	return rows
}
