package main

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestBinaryLinksNoTesting: nothing test-only ships. The binary's
// dependencies hold no testing package (std's testing, or a library file
// that imports it) and no package of test helpers (fixturetest, httptest,
// a testenv): those belong to _test.go files.
func TestBinaryLinksNoTesting(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-test=false",
		"-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \",\"}}", module+"/cmd/tabwarden").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list -deps listed only %d packages:\n%s", len(lines), out)
	}
	seenFixture := false
	for _, l := range lines {
		f := strings.Fields(l)
		pkg, std := f[0], f[1] == "true"
		var imports []string
		if len(f) > 2 {
			imports = strings.Split(f[2], ",")
		}
		if pkg == module+"/agent/demo/fixture" {
			seenFixture = true
		}
		if testOnly(pkg, std) {
			t.Errorf("the binary links %s, a test-only package (imported by %s)", pkg, importersOf(lines, pkg))
		}
		for _, imp := range imports {
			if imp == "testing" && !testOnly(pkg, std) {
				t.Errorf("%s imports testing into the binary", pkg)
			}
		}
	}
	// The check looked at the real graph: the demo's fixture server ships.
	if !seenFixture {
		t.Errorf("%s/agent/demo/fixture is not among the binary's dependencies: the list is not the binary's", module)
	}
}

// testOnly reports whether a package exists only for tests.
func testOnly(pkg string, std bool) bool {
	if std {
		return pkg == "testing" || strings.HasPrefix(pkg, "testing/") || pkg == "net/http/httptest"
	}
	base := path.Base(pkg)
	return strings.HasSuffix(base, "test") || base == "testenv" || base == "testutil"
}

// importersOf names the packages in a go list line set that import pkg.
func importersOf(lines []string, pkg string) string {
	var by []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 2 && strings.Contains(","+f[2]+",", ","+pkg+",") {
			by = append(by, f[0])
		}
	}
	return strings.Join(by, ", ")
}

// TestBinaryCarriesNoBenchmarkProbe: the benchmarks' observation points
// (files named *probe*.go in our packages) are built only with the
// tabwarden_probe tag, never into the binary.
func TestBinaryCarriesNoBenchmarkProbe(t *testing.T) {
	list := func(tags ...string) map[string]bool {
		args := append([]string{"list", "-deps", "-test=false"}, tags...)
		args = append(args, "-f", "{{.ImportPath}}:{{join .GoFiles \",\"}}", module+"/cmd/tabwarden")
		out, err := exec.CommandContext(t.Context(), "go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
		probes := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, files, _ := strings.Cut(l, ":")
			if !strings.HasPrefix(pkg, module) {
				continue
			}
			for _, f := range strings.Split(files, ",") {
				if strings.Contains(f, "probe") && !strings.Contains(f, "noprobe") {
					probes[pkg+"/"+f] = true
				}
			}
		}
		return probes
	}
	// The tagged build has the probe, so the check below looks at real files.
	if len(list("-tags", "tabwarden_probe")) == 0 {
		t.Fatal("no probe file even with -tags tabwarden_probe: the check proves nothing")
	}
	for f := range list() {
		t.Errorf("the binary builds %s, a benchmark probe", f)
	}
}
