package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

const testOperatorKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFx1rXo0dQ3o6i0Ps2jZ0W3l7yqA+0cZQkS0n8Tqv3oK ana"

// --ssh-listen never serves without a keys file, nor with a malformed
// one: exit 2 with a message that says what to do, before anything starts.
func TestSSHListenNeedsAuthorizedKeys(t *testing.T) {
	r := run(t, nil, "--ssh-listen", ":2222")
	r.wantCode(t, exitUsage)
	contains(t, "stderr", r.stderr, "--ssh-authorized-keys")

	bad := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(bad, []byte(strings.TrimSuffix(testOperatorKey, " ana")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "--ssh-listen", ":2222", "--ssh-authorized-keys", bad)
	r.wantCode(t, exitUsage)
	contains(t, "stderr", r.stderr, "no comment")

	r = run(t, nil, "--ssh-listen", "2222", "--ssh-authorized-keys", bad)
	r.wantCode(t, exitUsage)
	contains(t, "stderr", r.stderr, "--ssh-listen")
}

// doctor reports the SSH setup when asked about it.
func TestDoctorChecksSSH(t *testing.T) {
	good := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(good, []byte(testOperatorKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "doctor", "--headless", "--ssh-authorized-keys", good, "--ssh-listen", ":2222")
	contains(t, "doctor", r.stdout, "✓ ssh console", "1 key for ana", "listens on 127.0.0.1:2222", "host key made on first use")

	// Once the host key exists, doctor shows the fingerprint ssh asks the
	// operator to check on first connect.
	data := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(filepath.Join(data, "tabwarden"), 0o700)
	if err := os.WriteFile(filepath.Join(data, "tabwarden", "ssh_host_ed25519"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, _ := gossh.NewPublicKey(priv.Public())
	r = run(t, []string{"XDG_DATA_HOME=" + data}, "doctor", "--headless", "--ssh-authorized-keys", good)
	contains(t, "doctor", r.stdout, "✓ ssh console", gossh.FingerprintSHA256(pub))

	bad := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "doctor", "--headless", "--ssh-authorized-keys", bad)
	contains(t, "doctor", r.stdout, "✗ ssh console", "line 1: not a public key")
	r.wantCode(t, exitFailure)
}

// TestTmuxSSHOperators drives the real console with two operators on
// OpenSSH's ssh client in real terminals (scripts/tmux-ssh-test.sh): both
// see the review, ana's d wins and shows as "denied by ana" on every
// screen, bob's a afterwards approves nothing, the audit names ana's key,
// and a key not in the file is refused.
func TestTmuxSSHOperators(t *testing.T) {
	for _, tool := range []string{"tmux", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; CI installs it, so this is a broken CI setup", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	repo := filepath.Join("..", "..")
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(repo, "scripts", "tmux-ssh-test.sh"),
		binPath, filepath.Join(repo, "testdata", "scripts", "keyahead.jsonl"))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("tmux ssh test: %v", err)
	}
}
