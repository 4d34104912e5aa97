package audit

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// auditDoc is the user reference for the audit log.
const auditDoc = "../../docs/audit.md"

func readAuditDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(auditDoc)
	if err != nil {
		t.Fatalf("the audit log's reference: %v", err)
	}
	return string(b)
}

// recordFields are the JSON names of Record's fields, from its tags.
func recordFields(t *testing.T) []string {
	t.Helper()
	var names []string
	rt := reflect.TypeFor[Record]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Fatalf("Record.%s has no JSON name: every field of the log is documented by it", rt.Field(i).Name)
		}
		names = append(names, name)
	}
	return names
}

// kindsInSource are the values of every constant of type Kind declared in
// the package's shipped files: a new kind is found without a list to keep.
func kindsInSource(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a Kind constant that is not a string literal", fset.Position(v.Pos()))
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					kinds = append(kinds, s)
				}
			}
		}
	}
	if len(kinds) == 0 {
		t.Fatal("found no Kind constants")
	}
	return kinds
}

// Every field a record can carry has its own section in docs/audit.md, and
// every section names a field a record has.
func TestAuditDocCoversEveryField(t *testing.T) {
	doc := readAuditDoc(t)
	fields := recordFields(t)
	known := map[string]bool{}
	for _, f := range fields {
		known[f] = true
		if !strings.Contains(doc, "\n### `"+f+"`\n") {
			t.Errorf("%s has no section \"### `%s`\" for a field of Record", auditDoc, f)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^### `([A-Za-z0-9]+)`$").FindAllStringSubmatch(doc, -1) {
		if !known[m[1]] {
			t.Errorf("%s documents a field %q that Record does not have", auditDoc, m[1])
		}
	}
}

// Every kind of record has its row in the doc's table of kinds.
func TestAuditDocCoversEveryKind(t *testing.T) {
	doc := readAuditDoc(t)
	for _, k := range kindsInSource(t) {
		if !strings.Contains(doc, "\n| `"+k+"` |") {
			t.Errorf("%s has no row \"| `%s` |\" in its table of kinds", auditDoc, k)
		}
	}
}

// The doc's JSON examples are records as the log holds them: nothing the
// reader would not find in a real line.
func TestAuditDocExamplesAreRecords(t *testing.T) {
	doc := readAuditDoc(t)
	blocks := regexp.MustCompile("(?ms)^```json\n(.*?)^```$").FindAllStringSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatalf("%s shows no JSON record", auditDoc)
	}
	for _, b := range blocks {
		for line := range strings.Lines(b[1]) {
			dec := json.NewDecoder(bytes.NewReader([]byte(line)))
			dec.DisallowUnknownFields()
			var rec Record
			if err := dec.Decode(&rec); err != nil {
				t.Errorf("example %q is not a record: %v", strings.TrimSpace(line), err)
				continue
			}
			if err := decodeRecord([]byte(line), &rec); err != nil {
				t.Errorf("example %q would be skipped by readers: %v", strings.TrimSpace(line), err)
			}
		}
	}
}
