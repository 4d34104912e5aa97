package policy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// policyDoc is the user reference for the policy file.
const policyDoc = "../docs/policy.md"

func readPolicyDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(policyDoc)
	if err != nil {
		t.Fatalf("the policy file's reference: %v", err)
	}
	return string(b)
}

// Every key the schema knows has its own section in docs/policy.md, so an
// operator never meets a key (or a message listing it) that the reference
// does not explain.
func TestPolicyDocCoversEveryKey(t *testing.T) {
	doc := readPolicyDoc(t)
	if len(executionKeys) == 0 {
		t.Fatal("the schema lists no keys")
	}
	for _, k := range executionKeys {
		heading := "### `execution." + k.name + "`"
		if !strings.Contains(doc, "\n"+heading+"\n") {
			t.Errorf("%s has no section %q for a key the schema knows", policyDoc, heading)
		}
		// The table is what the loader consults; a key it lists must be
		// one the loader accepts, or the doc would describe a key that
		// fails as unknown.
		if _, err := Parse("probe.json", []byte(`{"execution":{"`+k.name+`":null}}`)); err != nil &&
			strings.Contains(err.Error(), "Unknown key") {
			t.Errorf("key %s is in the table but the loader calls it unknown: %v", k.name, err)
		}
	}
}

// Every section the doc gives a key names a key the schema knows: the
// reference promises nothing the console would refuse.
func TestPolicyDocNamesNoUnknownKey(t *testing.T) {
	doc := readPolicyDoc(t)
	known := map[string]bool{}
	for _, k := range executionKeys {
		known[k.name] = true
	}
	for _, m := range regexp.MustCompile("(?m)^### `execution\\.([A-Za-z]+)`$").FindAllStringSubmatch(doc, -1) {
		if !known[m[1]] {
			t.Errorf("%s documents execution.%s, which the schema does not know", policyDoc, m[1])
		}
	}
}

// The doc's JSON and YAML examples are valid policies as written; examples
// of mistakes are fenced as text.
func TestPolicyDocExamplesAreValid(t *testing.T) {
	doc := readPolicyDoc(t)
	fence := regexp.MustCompile("(?ms)^```(json|yaml)\n(.*?)^```$")
	blocks := fence.FindAllStringSubmatch(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("%s has %d JSON/YAML examples, want several", policyDoc, len(blocks))
	}
	for i, b := range blocks {
		name := "example." + b[1]
		if _, err := Parse(name, []byte(b[2])); err != nil {
			t.Errorf("example %d (%s) in %s is not a valid policy: %v\n%s", i+1, b[1], policyDoc, err, b[2])
		}
	}
}
