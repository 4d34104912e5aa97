package policy

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func testdata(name string) string { return filepath.Join("..", "testdata", "policies", name) }

func TestCheckFilesValid(t *testing.T) {
	cases := []struct {
		file    string
		origins []string // nil: unrestricted
		uploads bool
		floor   string
	}{
		{"valid.json", []string{"http://[::1]", "http://localhost:8080", "https://a.example", "https://xn--bcher-kva.example"}, false, "trusted"},
		{"valid.yaml", []string{"https://a.example", "https://c.example", "https://xn--bcher-kva.example"}, true, "thread"},
		{"uploads-only.yml", nil, true, ""},
		{"no-websites.json", []string{}, false, ""},
		{"sniffed-json.policy", []string{"https://a.example"}, false, "strict"},
		{"sniffed-yaml.policy", []string{"https://a.example"}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p, err := CheckFiles([]string{testdata(c.file)})
			if err != nil {
				t.Fatal(err)
			}
			if (p.Origins == nil) != (c.origins == nil) || !slices.Equal(p.Origins, c.origins) {
				t.Errorf("Origins = %#v, want %#v", p.Origins, c.origins)
			}
			if p.BlockUploads != c.uploads || p.ConsentFloor != c.floor {
				t.Errorf("BlockUploads, ConsentFloor = %v, %q; want %v, %q", p.BlockUploads, p.ConsentFloor, c.uploads, c.floor)
			}
			if !slices.Equal(p.Sources, []string{testdata(c.file)}) {
				t.Errorf("Sources = %v", p.Sources)
			}
		})
	}
}

func TestCheckFilesInvalid(t *testing.T) {
	cases := []struct {
		file string
		want []string // each problem's text after "<path>: "
	}{
		{"invalid-path.json", []string{`execution.browserOrigins[2] "https://a.example/x": ` + MsgInvalidOrigin}},
		{"invalid-credentials.json", []string{`execution.browserOrigins[0] "https://user:secret@a.example": ` + MsgInvalidOrigin}},
		{"invalid-query.json", []string{`execution.browserOrigins[0] "https://a.example/?q=1": ` + MsgInvalidOrigin}},
		{"invalid-hash.json", []string{`execution.browserOrigins[0] "https://a.example/#top": ` + MsgInvalidOrigin}},
		{"invalid-scheme.yaml", []string{`execution.browserOrigins[0] "ftp://a.example": ` + MsgInvalidOrigin}},
		{"invalid-empty-host.yaml", []string{`execution.browserOrigins[0] "https://": ` + MsgInvalidOrigin}},
		{"too-many.json", []string{"execution.browserOrigins: " + MsgTooManyOrigins}},
		{"unknown-key.yaml", []string{"execution.blockUploads: Unknown key"}},
		{"unknown-top-key.json", []string{"version: Unknown key"}},
		{"top-level-origins.yaml", []string{
			"browserOrigins: Belongs under execution: write it as execution.browserOrigins",
			"consentFloor: Belongs under execution: write it as execution.consentFloor",
		}},
		{"duplicate-key.yaml", []string{"execution.browserOrigins: Duplicate key."}},
		{"bad-floor.yaml", []string{`execution.consentFloor "lax": Use strict, thread, or trusted.`}},
		{"null-origins.yaml", []string{"execution.browserOrigins: Use a list of sites; [] allows no website."}},
		{"bad-uploads-type.json", []string{"execution.blockBrowserUploads: Use true or false."}},
		{"bad-yaml.yaml", []string{"Not valid YAML: "}},
		{"bad-json.json", []string{"Not valid JSON: line 1: "}},
		{"missing.json", []string{"Cannot read: "}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := testdata(c.file)
			p, err := CheckFiles([]string{path})
			var ve *ValidationError
			if !errors.As(err, &ve) || p != nil {
				t.Fatalf("CheckFiles = %v, %v; want *ValidationError", p, err)
			}
			if len(ve.Problems) != len(c.want) {
				t.Fatalf("problems:\n%v\nwant %d", err, len(c.want))
			}
			for i, w := range c.want {
				got := ve.Problems[i].String()
				if !strings.HasPrefix(got, path+": "+w) {
					t.Errorf("problem %d = %q, want prefix %q", i, got, path+": "+w)
				}
			}
		})
	}
}

// The exact line design.md §8 asks for, with the file and the entry named.
func TestInvalidOriginMessageIsExact(t *testing.T) {
	_, err := Parse("policy.json", []byte(`{"execution":{"browserOrigins":["https://a.example","https://b.example","https://a.example/x"]}}`))
	want := `policy.json: execution.browserOrigins[2] "https://a.example/x": Use an HTTP or HTTPS site without a path, credentials, or query.`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestCheckFilesReportsEveryProblem(t *testing.T) {
	paths := []string{testdata("valid.json"), testdata("invalid-path.json"), testdata("bad-floor.yaml"), testdata("unknown-key.yaml")}
	_, err := CheckFiles(paths)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	var files []string
	for _, p := range ve.Problems {
		files = append(files, p.File)
	}
	if !slices.Equal(files, paths[1:]) {
		t.Errorf("problem files = %v, want %v", files, paths[1:])
	}
	if got := strings.Count(err.Error(), "\n"); got != 2 {
		t.Errorf("Error() has %d newlines, want one line per problem:\n%v", got, err)
	}
}

func TestParseShapes(t *testing.T) {
	cases := []struct {
		name, data string
		ok         bool
	}{
		{"a.json", `{}`, true},
		{"a.json", `{"execution":{}}`, true},
		{"a.json", "\ufeff" + `{"execution":{"blockBrowserUploads":true}}`, true},
		{"a.yaml", "execution:\n  blockBrowserUploads: TRUE\n", true},
		{"a.yaml", "base: &o [https://a.example]\n", false},
		{"a.yaml", "x: &o [https://a.example]\nexecution:\n  browserOrigins: *o\n", false},
		{"a.yaml", "", false},
		{"a.yaml", "# only a comment\n", false},
		{"a.yaml", "execution: {}\n---\nexecution: {}\n", false},
		{"a.yaml", "[]", false},
		{"a.json", `{"execution":null}`, false},
		{"a.json", `{"execution":{"browserOrigins":[42]}}`, false},
		{"a.json", `{"execution":{"browserOrigins":"https://a.example"}}`, false},
		{"a.json", `{"execution":{"consentFloor":"Thread"}}`, false},
		{"a.json", `{"execution":{"consentFloor":true}}`, false},
		{"a.json", `{"execution":{"blockBrowserUploads":1}}`, false},
		{"a.yaml", "execution:\n  blockBrowserUploads: yes\n", false},
		{"a.json", `{"execution":{}} {}`, false},
		{"a.json", "execution: {}", false},
	}
	for _, c := range cases {
		_, err := Parse(c.name, []byte(c.data))
		if (err == nil) != c.ok {
			t.Errorf("Parse(%s, %q) err = %v, want ok=%v", c.name, c.data, err, c.ok)
		}
		var ve *ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Errorf("Parse(%q) error is %T, want *ValidationError", c.data, err)
		}
	}
}

// A YAML alias is read like the value it names.
func TestParseFollowsAliases(t *testing.T) {
	p, err := Parse("a.yaml", []byte("execution:\n  browserOrigins: &o [https://a.example]\n  consentFloor: &f strict\n"))
	if err != nil || !slices.Equal(p.Origins, []string{"https://a.example"}) || p.ConsentFloor != "strict" {
		t.Fatalf("Parse = %+v, %v", p, err)
	}
}

func TestCheckFilesNoPaths(t *testing.T) {
	p, err := CheckFiles(nil)
	if p != nil || err != nil {
		t.Fatalf("CheckFiles(nil) = %v, %v; want nil, nil", p, err)
	}
}
