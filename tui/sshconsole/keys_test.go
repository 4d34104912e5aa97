package sshconsole

import (
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	ana, ana2, bob := newKey(t, "ana"), newKey(t, "ana"), newKey(t, "bob")
	k, err := ParseKeys([]byte("# operators\n\n" + ana.line + "\n" + ana2.line + "\n" + bob.line + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 3 || strings.Join(k.Names(), ",") != "ana,bob" {
		t.Fatalf("keys %d names %v", k.Len(), k.Names())
	}
	op, ok := k.Lookup(bob.signer.PublicKey())
	if !ok || op.Name != "bob" || op.Fingerprint != bob.fingerprint() {
		t.Fatalf("lookup bob: %+v %v", op, ok)
	}
	noComment := strings.TrimSuffix(ana.line, " ana")
	for name, data := range map[string]string{
		"no comment": noComment,
		"options":    `from="10.0.0.1" ` + ana.line,
		"garbage":    "ssh-ed25519 AAAAnotbase64 eve",
		"bad name":   noComment + " ana\x1b[31m",
		"key twice":  ana.line + "\n" + noComment + " mallory",
		"empty":      "# nobody\n",
	} {
		if _, err := ParseKeys([]byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
