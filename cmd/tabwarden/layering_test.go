package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tabwarden/tabwarden"

// TestLayering enforces DESIGN §2's one-way dependencies: consent and policy
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
