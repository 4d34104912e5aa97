package sshconsole

import (
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

func TestParseKeys(t *testing.T) {
	ana, ana2, bob := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "bob")
	k, err := ParseKeys([]byte("# operators\n\n" + ana.Line + "\n" + ana2.Line + "\n" + bob.Line + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 3 || strings.Join(k.Names(), ",") != "ana,bob" {
		t.Fatalf("keys %d names %v", k.Len(), k.Names())
	}
	op, ok := k.Lookup(bob.Signer.PublicKey())
	if !ok || op.Name != "bob" || op.Fingerprint != bob.Fingerprint() {
		t.Fatalf("lookup bob: %+v %v", op, ok)
	}
	noComment := strings.TrimSuffix(ana.Line, " ana")
	for name, data := range map[string]string{
		"no comment": noComment,
		"options":    `from="10.0.0.1" ` + ana.Line,
		"garbage":    "ssh-ed25519 AAAAnotbase64 eve",
		"bad name":   noComment + " ana\x1b[31m",
		"key twice":  ana.Line + "\n" + noComment + " mallory",
		"empty":      "# nobody\n",
	} {
		if _, err := ParseKeys([]byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
