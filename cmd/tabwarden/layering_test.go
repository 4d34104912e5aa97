package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tabwarden/tabwarden"

// TestLayering enforces design.md §2's one-way dependencies: consent and policy
// are pure Go (no rod, no bubbletea) and unit-testable without a browser or
// a terminal; policy is the bottom layer; the TUI never calls rod.
func TestLayering(t *testing.T) {
	for _, tc := range []struct {
		pkgs      string
		forbidden []string
	}{
		{module + "/policy/...", []string{"github.com/go-rod/", "charm.land/", "github.com/charmbracelet/",
			module + "/consent", module + "/browser", module + "/webmcp", module + "/tui", module + "/agent", module + "/cmd"}},
		{module + "/consent/...", []string{"github.com/go-rod/", "charm.land/", "github.com/charmbracelet/",
			module + "/browser", module + "/webmcp", module + "/tui", module + "/agent", module + "/cmd"}},
		{module + "/tui/...", []string{"github.com/go-rod/", module + "/browser", module + "/agent", module + "/cmd"}},
	} {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-test=false", tc.pkgs).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkgs, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s listed nothing", tc.pkgs)
		}
		for _, d := range deps {
			for _, f := range tc.forbidden {
				if d == f || strings.HasPrefix(d, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(d, f)) {
					t.Errorf("%s depends on %s (forbidden: %s)", tc.pkgs, d, f)
				}
			}
		}
	}
}

// TestRodOnlyInBrowserAndWebmcp enforces that rod stays inside browser/
// and webmcp/ (design.md §2, issue 12): no other package imports it, in its
// own files or its tests. The agent reaches a tab through browser.Handle.
func TestRodOnlyInBrowserAndWebmcp(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s/...: %v\n%s", module, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list listed %d packages", len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		pkg := f[0]
		if pkg == module+"/browser" || pkg == module+"/webmcp" ||
			strings.HasPrefix(pkg, module+"/browser/") || strings.HasPrefix(pkg, module+"/webmcp/") {
			continue
		}
		for _, imp := range f[1:] {
			if imp == "github.com/go-rod/rod" || strings.HasPrefix(imp, "github.com/go-rod/rod/") {
				t.Errorf("%s imports %s: rod stays in browser/ and webmcp/", pkg, imp)
			}
		}
	}
}

// TestErrcodeAtTheBottom: the §5 codes and the error envelope sit under
// every layer, so any package may import them; they import only the
// standard library.
func TestErrcodeAtTheBottom(t *testing.T) {
	pkg := module + "/consent/errcode"
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-test=false", "-f", "{{.ImportPath}} {{.Standard}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list -deps %s listed %q: the check below proves nothing", pkg, out)
	}
	for _, l := range lines {
		path, std, _ := strings.Cut(l, " ")
		if path != pkg && std != "true" {
			t.Errorf("%s depends on %s, which is not the standard library", pkg, path)
		}
	}
}
