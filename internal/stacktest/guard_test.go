package stacktest_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestNoShippedPackageImportsTheKit: the test kits (this package and
// every other *test package of the module: servetest, logtest, displaytest,
// sshtest, fixturetest…) are for _test.go files. A non-test file of any
// package of the module that imports one fails here, whether or not the
// binary links that package (cmd/tabwarden's TestBinaryLinksNoTesting
// watches the binary alone). Other *test packages, themselves test-only,
// may build on them.
func TestNoShippedPackageImportsTheKit(t *testing.T) {
	const module = "github.com/tabwarden/tabwarden"
	kit := func(pkg string) bool {
		return strings.HasPrefix(pkg, module+"/") && strings.HasSuffix(path.Base(pkg), "test")
	}
	// kitOnKit counts kits importing kits (servetest imports stacktest): the
	// sign that the import lists read are real.
	kitOnKit := 0
	// go list's Imports are those of the non-test files only.
	out, err := exec.CommandContext(t.Context(), "go", "list", "-f", "{{.ImportPath}} {{join .Imports \",\"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		listed++
		for _, imp := range strings.Split(imports, ",") {
			switch {
			case !kit(imp):
			case kit(pkg):
				kitOnKit++
			default:
				t.Errorf("%s imports the test kit %s in a non-test file", pkg, imp)
			}
		}
	}
	if listed < 20 || kitOnKit == 0 {
		t.Fatalf("go list named %d packages and no kit importing a kit: the check saw too little\n%s", listed, out)
	}
}
