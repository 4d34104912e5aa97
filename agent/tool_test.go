package agent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestSpecsCoverTheToolSurface(t *testing.T) {
	want := []string{"browser_tabs", "browser_open", "browser_navigate", "browser_observe", "browser_act",
		"browser_verify", "browser_handoff", "browser_close", "browser_upload", "browser_batch", "browser_job", "webmcp_list_tools", "webmcp_call_tool"}
	var got []string
	readOnly := map[string]bool{}
	for _, s := range Default.Tools {
		got = append(got, s.Name)
		readOnly[s.Name] = s.ReadOnly
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Specs = %v, want %v", got, want)
	}
	for name, ro := range readOnly {
		wantRO := name == "browser_tabs" || name == "browser_observe" || name == "browser_verify" || name == "webmcp_list_tools"
		if ro != wantRO {
			t.Errorf("%s: ReadOnly = %v, want %v", name, ro, wantRO)
		}
	}
}

func TestSpecSchemas(t *testing.T) {
	schemas := map[string]map[string]any{}
	for _, s := range Default.Tools {
		sch, err := s.InputSchema()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(sch)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["type"] != "object" {
			t.Fatalf("%s: schema type %v", s.Name, m["type"])
		}
		schemas[s.Name] = m
	}
	prop := func(tool string, path ...string) map[string]any {
		t.Helper()
		m := schemas[tool]
		for _, p := range path {
			props, _ := m["properties"].(map[string]any)
			m, _ = props[p].(map[string]any)
			if m == nil {
				t.Fatalf("%s: no property %v", tool, path)
			}
		}
		return m
	}
	required := func(tool string) []any { r, _ := schemas[tool]["required"].([]any); return r }

	if input := prop("webmcp_call_tool", "input"); input["type"] != "object" {
		t.Errorf("site-tool input schema = %v, want an object (not bytes)", input)
	}
	if r := required("browser_act"); !slices.Contains(r, any("observationId")) || !slices.Contains(r, any("action")) {
		t.Errorf("browser_act required = %v", r)
	}
	if r := required("browser_open"); !slices.Equal(r, []any{"url"}) {
		t.Errorf("browser_open required = %v", r)
	}
	if e := prop("browser_act", "action", "type")["enum"]; len(e.([]any)) != 5 {
		t.Errorf("act types = %v", e)
	}
	if e := prop("browser_act", "action", "key")["enum"].([]any); !slices.Contains(e, any("PageDown")) || len(e) != 13 {
		t.Errorf("act keys = %v", e)
	}
	d := prop("browser_act", "action", "deltaY")
	if d["minimum"] != -1200.0 || d["maximum"] != 1200.0 {
		t.Errorf("deltaY bounds = %v", d)
	}
	if e := prop("browser_verify", "assertion")["enum"]; len(e.([]any)) != 5 {
		t.Errorf("assertions = %v", e)
	}
	if e := prop("browser_navigate", "action")["enum"]; len(e.([]any)) != 3 {
		t.Errorf("navigate actions = %v", e)
	}
	if r := required("browser_close"); !slices.Equal(r, []any{"tabId"}) {
		t.Errorf("browser_close required = %v", r)
	}
	if p := schemas["browser_tabs"]["properties"]; p != nil {
		t.Errorf("browser_tabs takes arguments: %v", p)
	}
}

// The descriptions carry the rules a model must not learn by failing.
func TestSpecDescriptionsTeachTheRules(t *testing.T) {
	desc := map[string]string{}
	for _, s := range Default.Tools {
		desc[s.Name] = s.Description
	}
	must := map[string][]string{
		"browser_observe":  {"before browser_act", "used up by one action", "untrusted"},
		"browser_act":      {"receipt", "does not mean the action worked", "mayHaveChangedState", "never repeat", "browser_handoff", "used up"},
		"browser_handoff":  {"sign in", "CAPTCHA"},
		"webmcp_call_tool": {"result_withheld", "untrusted", "never repeat"},
		"browser_tabs":     {"untrusted"},
	}
	for tool, phrases := range must {
		for _, p := range phrases {
			if !strings.Contains(desc[tool], p) {
				t.Errorf("%s description lacks %q", tool, p)
			}
		}
	}
}

// TestSpecSchemasArePortable pins what common hosts accept: every "type" is
// one plain type name (Gemini function declarations read schemas as OpenAPI
// and reject type arrays such as ["null","number"]), every array says what
// its items are, and no keyword appears that those hosts reject.
func TestSpecSchemasArePortable(t *testing.T) {
	plain := map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true}
	rejected := []string{"$ref", "$defs", "definitions", "oneOf", "allOf", "not", "if", "then", "else", "const", "patternProperties", "pattern", "format", "$schema", "$id"}
	var walk func(tool, path string, node map[string]any)
	walk = func(tool, path string, node map[string]any) {
		typ, ok := node["type"].(string)
		if !ok || !plain[typ] {
			t.Errorf("%s %s: type %v is not one plain type name", tool, path, node["type"])
		}
		if typ == "array" {
			if _, ok := node["items"].(map[string]any); !ok {
				t.Errorf("%s %s: array without items", tool, path)
			}
		}
		for _, kw := range rejected {
			if _, ok := node[kw]; ok {
				t.Errorf("%s %s: keyword %q", tool, path, kw)
			}
		}
		if props, ok := node["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(tool, path+"."+name, p.(map[string]any))
			}
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(tool, path+"[]", items)
		}
	}
	for _, spec := range Default.Tools {
		schema, err := spec.InputSchema()
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(schema)
		if err != nil {
			t.Fatal(err)
		}
		var node map[string]any
		if err := json.Unmarshal(data, &node); err != nil {
			t.Fatal(err)
		}
		walk(spec.Name, "$", node)
	}
}
