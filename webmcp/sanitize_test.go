package webmcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

const testOrigin = "http://127.0.0.1:8080"

func desc(name, schema string) Descriptor {
	return Descriptor{Name: name, Description: "does " + name, InputSchema: json.RawMessage(schema), Origin: testOrigin, Frame: "F1"}
}

func TestSchemaFiles(t *testing.T) {
	files, err := filepath.Glob("../testdata/schemas/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("hostile schemas missing: %v %d", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tool, rej := Sanitize(desc("t", string(b)))
			wantOK := strings.HasPrefix(filepath.Base(f), "ok-")
			if wantOK {
				if rej != nil {
					t.Fatalf("rejected a valid schema: %+v", rej)
				}
				assertLimits(t, tool.InputSchema)
				return
			}
			if rej == nil {
				t.Fatalf("accepted hostile schema %s", b)
			}
			if rej.Code != errcode.UnsupportedSchema || rej.Name == nil || *rej.Name != "t" || rej.Origin != testOrigin {
				t.Fatalf("entry = %+v", rej)
			}
		})
	}
}

// nest builds a schema nested n JSON levels deep through "not".
func nest(n int) string {
	// {"type":"object","not":{"not":...{}}}: root is level 1.
	return `{"type":"object","not":` + strings.Repeat(`{"not":`, n-2) + `{}` + strings.Repeat(`}`, n-2) + `}`
}

func manyNodes(n int) string {
	// root object (1 node) + "enum" array (1) + n-2 numbers
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"enum":[`)
	// nodes: root, "object" string, properties obj, x obj, enum array = 5
	for i := 0; i < n-5; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("1")
	}
	b.WriteString(`]}}}`)
	return b.String()
}

func bigSchema(size int) string {
	pad := size - len(`{"type":"object","description":""}`)
	return `{"type":"object","description":"` + strings.Repeat("a", pad) + `"}`
}

func TestSchemaLimits(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		ok     bool
	}{
		{"depth 32", nest(32), true},
		{"depth 33", nest(33), false},
		{"5000 nodes", manyNodes(5000), true},
		{"5001 nodes", manyNodes(5001), false},
		{"64 KiB", bigSchema(MaxSchemaBytes), true},
		{"64 KiB + 1", bigSchema(MaxSchemaBytes + 1), false},
		{"65 KiB", bigSchema(65 << 10), false},
		{"no schema", "", true},
		{"null schema", "null", true},
		{"array root", "[]", false},
		{"not JSON", "{", false},
		{"trailing", "{} {}", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool, rej := Sanitize(desc("t", c.schema))
			if c.ok != (rej == nil) {
				t.Fatalf("ok=%v, rejection %+v", c.ok, rej)
			}
			if rej != nil && rej.Code != errcode.UnsupportedSchema {
				t.Fatalf("code %s", rej.Code)
			}
			if tool != nil {
				assertLimits(t, tool.InputSchema)
			}
		})
	}
}

func TestNodeCountIgnoresKeys(t *testing.T) {
	// 1 root + "object" + properties + 3 property schemas = 6 nodes.
	if err := checkShape([]byte(`{"type":"object","properties":{"a":{},"b":{},"c":{}}}`)); err != nil {
		t.Fatal(err)
	}
}

func TestNames(t *testing.T) {
	for _, n := range []string{"a", "read_status", "A.b-c_9", strings.Repeat("x", 128)} {
		if !ValidName(n) {
			t.Errorf("%q should be valid", n)
		}
	}
	for _, n := range []string{"", " ", "bad name", "naïve", "a/b", "a\x00", strings.Repeat("x", 129), "<script>"} {
		if ValidName(n) {
			t.Errorf("%q should be invalid", n)
		}
		_, rej := Sanitize(desc(n, ""))
		if rej == nil || rej.Code != errcode.InvalidSiteTool || rej.Name != nil {
			t.Errorf("%q: %+v", n, rej)
		}
	}
}

func TestTextRules(t *testing.T) {
	d := desc("t", "")
	d.Description = "  line\x00one\nline\u202etwo\x1b[31m  "
	d.Title = "Ti\x07tle"
	tool, rej := Sanitize(d)
	if rej != nil {
		t.Fatal(rej)
	}
	if tool.Description != "lineone linetwo[31m" || tool.Title != "Title" {
		t.Fatalf("%q %q", tool.Description, tool.Title)
	}
	for name, mut := range map[string]func(*Descriptor){
		"no description":   func(d *Descriptor) { d.Description = "" },
		"only controls":    func(d *Descriptor) { d.Description = "\x00\x01\u200b" },
		"long description": func(d *Descriptor) { d.Description = strings.Repeat("é", MaxDescriptionLen+1) },
		"long title":       func(d *Descriptor) { d.Title = strings.Repeat("t", MaxTitleLen+1) },
		"remote http":      func(d *Descriptor) { d.Origin = "http://example.com" },
		"file origin":      func(d *Descriptor) { d.Origin = "file://" },
		"opaque origin":    func(d *Descriptor) { d.Origin = "null" },
	} {
		d := desc("t", "")
		mut(&d)
		_, rej := Sanitize(d)
		if rej == nil || rej.Code != errcode.InvalidSiteTool || rej.Name == nil {
			t.Errorf("%s: %+v", name, rej)
		}
	}
	for _, o := range []string{"https://example.com", "http://localhost:3000", "http://[::1]:9", "http://127.0.0.2"} {
		d := desc("t", "")
		d.Origin = o
		if _, rej := Sanitize(d); rej != nil {
			t.Errorf("%s rejected: %+v", o, rej)
		}
	}
	d = desc("t", "")
	d.Description = strings.Repeat("é", MaxDescriptionLen)
	if _, rej := Sanitize(d); rej != nil {
		t.Errorf("4096 runes rejected: %+v", rej)
	}
}

func TestQuotasNeverHideValidTools(t *testing.T) {
	var ds []Descriptor
	// Junk first, in another frame: it must not use up any quota.
	for i := 0; i < 100; i++ {
		d := desc(fmt.Sprintf("bad %d", i), "")
		d.Frame = "junk"
		ds = append(ds, d)
	}
	for i := 0; i < 2; i++ {
		d := desc("dup", "")
		d.Frame = "D"
		ds = append(ds, d)
	}
	for f := 0; f < 6; f++ {
		for i := 0; i < 40; i++ {
			d := desc(fmt.Sprintf("t%d", i), "")
			d.Frame = fmt.Sprintf("F%d", f)
			ds = append(ds, d)
		}
	}
	tools, rej := SanitizeAll(ds)
	if len(tools) != MaxToolsPerTab {
		t.Fatalf("kept %d tools", len(tools))
	}
	perFrame := map[string]int{}
	for _, tl := range tools {
		perFrame[tl.Frame]++
	}
	for f, n := range perFrame {
		if n > MaxToolsPerFrame {
			t.Fatalf("frame %s kept %d", f, n)
		}
	}
	if perFrame["D"] != 1 || perFrame["F0"] != 32 || perFrame["F3"] != 31 || perFrame["F4"] != 0 {
		t.Fatalf("per frame %v", perFrame)
	}
	// Every descriptor is accounted for exactly once.
	if len(tools)+len(rej) != len(ds) {
		t.Fatalf("%d tools + %d rejected != %d", len(tools), len(rej), len(ds))
	}
	var dup int
	for _, r := range rej {
		if r.Code != errcode.InvalidSiteTool {
			t.Fatalf("quota code %s", r.Code)
		}
		if strings.Contains(r.Error, "already registered") {
			dup++
		}
	}
	if dup != 1 {
		t.Fatalf("duplicate entries %d", dup)
	}
}

func TestExaminedBounds(t *testing.T) {
	var ds []Descriptor
	// The top frame's one valid tool comes after 10 junk registrations.
	for i := 0; i < 10; i++ {
		ds = append(ds, desc(fmt.Sprintf("bad %d", i), ""))
	}
	ds = append(ds, desc("top_tool", ""))
	// A flooding frame: 5000 registrations.
	for i := 0; i < 5000; i++ {
		d := desc(fmt.Sprintf("flood_%d", i), `{"type":"object","properties":{"q":{"pattern":"x"}}}`)
		d.Frame = "flood"
		ds = append(ds, d)
	}
	tools, rej := SanitizeAll(ds)
	if len(tools) != 1 || tools[0].Name != "top_tool" {
		t.Fatalf("tools %v", tools)
	}
	// 10 junk + 256 examined flood entries + 1 summary for the flood frame.
	if len(rej) != 10+MaxExaminedPerFrame+1 || !strings.Contains(rej[len(rej)-1].Error, fmt.Sprintf("%d more registrations", 5000-MaxExaminedPerFrame)) {
		t.Fatalf("%d entries, last %+v", len(rej), rej[len(rej)-1])
	}
	// Many frames: the tab bound ends the listing with one entry.
	ds = nil
	for i := 0; i < 2000; i++ {
		d := desc(fmt.Sprintf("t%d", i), "")
		d.Frame = fmt.Sprintf("F%d", i)
		ds = append(ds, d)
	}
	tools, rej = SanitizeAll(ds)
	if len(tools) != MaxToolsPerTab || len(tools)+len(rej) != MaxExaminedPerTab+1 {
		t.Fatalf("%d tools, %d rejected", len(tools), len(rej))
	}
}

func TestDigestChangesWithDescriptor(t *testing.T) {
	a, _ := Sanitize(desc("t", `{"type":"object"}`))
	b, _ := Sanitize(desc("t", `{"type":"object","properties":{"x":{}}}`))
	c, _ := Sanitize(desc("t", `{ "type" : "object" }`))
	if a.Digest == b.Digest {
		t.Fatal("digest ignores the schema")
	}
	if a.Digest != c.Digest {
		t.Fatal("digest depends on whitespace")
	}
}

func TestValidateInput(t *testing.T) {
	tool, rej := Sanitize(desc("t", `{"type":"object","properties":{"title":{"type":"string","maxLength":5},"n":{"type":"integer"}},"required":["title"],"additionalProperties":false}`))
	if rej != nil {
		t.Fatal(rej)
	}
	if out, err := ValidateInput(tool, json.RawMessage(`{"title":"abc", "n": 2}`)); err != nil || string(out) != `{"n":2,"title":"abc"}` {
		t.Fatalf("%s %v", out, err)
	}
	for name, in := range map[string]string{
		"missing":  `{}`,
		"type":     `{"title":"SECRET-VALUE-1","n":"x"}`,
		"extra":    `{"title":"a","zzz":1}`,
		"long":     `{"title":"SECRET-VALUE-2"}`,
		"array":    `[]`,
		"not json": `{"title":`,
		"too big":  `{"title":"` + strings.Repeat("a", MaxInputBytes) + `"}`,
	} {
		_, err := ValidateInput(tool, json.RawMessage(in))
		if !errors.Is(err, &errcode.Error{Code: errcode.InvalidInput}) {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Contains(err.Error(), "SECRET-VALUE") {
			t.Errorf("%s: error quotes the input: %v", name, err)
		}
	}
	empty, _ := Sanitize(desc("e", ""))
	if _, err := ValidateInput(empty, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCheckResult(t *testing.T) {
	if out, err := CheckResult(json.RawMessage(" {\"a\": 1} ")); err != nil || string(out) != `{"a":1}` {
		t.Fatalf("%s %v", out, err)
	}
	if _, err := CheckResult(json.RawMessage(`{"a":`)); errcode.Of(err) != errcode.InvalidResult {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("a", MaxResultBytes) + `"`)
	if _, err := CheckResult(big); errcode.Of(err) != errcode.ResultTooLarge {
		t.Fatal(err)
	}
}

// assertLimits is the fuzz oracle: whatever was accepted satisfies every
// limit of design.md §7.
func assertLimits(t testing.TB, schema json.RawMessage) {
	t.Helper()
	if len(schema) > MaxSchemaBytes {
		t.Fatalf("accepted %d bytes", len(schema))
	}
	if err := checkShape(schema); err != nil {
		t.Fatalf("accepted schema breaks a limit: %v", err)
	}
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatal(err)
	}
	var visit func(v any, schemaPos bool)
	visit = func(v any, schemaPos bool) {
		m, ok := v.(map[string]any)
		if !ok || !schemaPos {
			return
		}
		for k, sub := range m {
			if _, bad := forbidden[k]; bad {
				t.Fatalf("accepted keyword %s", k)
			}
			if k == "$ref" {
				r, _ := sub.(string)
				if !strings.HasPrefix(r, "#/$defs/") && !strings.HasPrefix(r, "#/definitions/") {
					t.Fatalf("accepted $ref %q", r)
				}
			}
			switch {
			case schemaMapKeywords[k]:
				for _, s := range sub.(map[string]any) {
					visit(s, true)
				}
			case schemaArrayKeywords[k]:
				for _, s := range sub.([]any) {
					visit(s, true)
				}
			case schemaKeywords[k]:
				visit(sub, true)
			case k == "items":
				if a, ok := sub.([]any); ok {
					for _, s := range a {
						visit(s, true)
					}
				} else {
					visit(sub, true)
				}
			}
		}
	}
	visit(v, true)
}

func FuzzSanitize(f *testing.F) {
	files, _ := filepath.Glob("../testdata/schemas/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add("t", string(b))
	}
	f.Add("bad name", nest(40))
	f.Add("n", `{"type":"object","properties":{"a":{"items":[{"pattern":"x"}]}}}`)
	f.Fuzz(func(t *testing.T, name, schema string) {
		tool, rej := Sanitize(Descriptor{Name: name, Description: "d", InputSchema: json.RawMessage(schema), Origin: testOrigin})
		if (tool == nil) == (rej == nil) {
			t.Fatal("exactly one of tool and rejection")
		}
		if rej != nil {
			if rej.Code != errcode.InvalidSiteTool && rej.Code != errcode.UnsupportedSchema {
				t.Fatalf("code %s", rej.Code)
			}
			return
		}
		if !ValidName(tool.Name) {
			t.Fatalf("accepted name %q", tool.Name)
		}
		assertLimits(t, tool.InputSchema)
		// An accepted schema must validate without panicking.
		_, _ = ValidateInput(tool, json.RawMessage(`{"a":1}`))
	})
}

// BenchmarkSanitize64KiB reports the worst case we know for a schema at the
// size limit: the largest schema of the most keyword-dense shape.
func BenchmarkSanitize64KiB(b *testing.B) {
	shapes := map[string]string{
		"string padding": bigSchema(MaxSchemaBytes),
		"5000 nodes":     manyNodes(MaxSchemaNodes),
		"wide properties": func() string {
			var s strings.Builder
			s.WriteString(`{"type":"object","properties":{`)
			for i := 0; s.Len() < MaxSchemaBytes-200; i++ {
				if i > 0 {
					s.WriteByte(',')
				}
				fmt.Fprintf(&s, `"p%d":{"type":"string"}`, i)
			}
			s.WriteString(`}}`)
			return s.String()
		}(),
		"100 refs, padded": func() string {
			var s strings.Builder
			s.WriteString(`{"type":"object","$defs":{"d":{"type":"integer"}},"properties":{`)
			for i := 0; i < MaxSchemaRefs; i++ {
				if i > 0 {
					s.WriteByte(',')
				}
				fmt.Fprintf(&s, `"p%d":{"$ref":"#/$defs/d"}`, i)
			}
			for i := 0; s.Len() < MaxSchemaBytes-200; i++ {
				fmt.Fprintf(&s, `,"q%d":{"type":"string"}`, i)
			}
			s.WriteString(`}}`)
			return s.String()
		}(),
		"too many refs": func() string {
			var s strings.Builder
			s.WriteString(`{"type":"object","$defs":{"d":{"type":"integer"}},"properties":{`)
			for i := 0; s.Len() < MaxSchemaBytes-200; i++ {
				if i > 0 {
					s.WriteByte(',')
				}
				fmt.Fprintf(&s, `"p%d":{"$ref":"#/$defs/d"}`, i)
			}
			s.WriteString(`}}`)
			return s.String()
		}(),
	}
	var worst time.Duration
	var worstName string
	for name, schema := range shapes {
		if len(schema) > MaxSchemaBytes {
			b.Fatalf("%s is %d bytes", name, len(schema))
		}
		b.Run(name, func(b *testing.B) {
			d := desc("t", schema)
			for b.Loop() {
				start := time.Now()
				Sanitize(d)
				if el := time.Since(start); el > worst {
					worst, worstName = el, name
				}
			}
		})
	}
	b.Logf("worst-case sanitize of a ≤64 KiB schema: %v (%s)", worst, worstName)
	fmt.Printf("worst-case sanitize of a ≤64 KiB schema: %v (%s)\n", worst, worstName)
}
