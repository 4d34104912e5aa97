package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/displaytest"
)

// xauthAdd writes a cookie for display into file with the xauth tool, the
// way ssh -X and xvfb-run do.
func xauthAdd(t *testing.T, file, display, cookie string) {
	t.Helper()
	if _, err := exec.LookPath("xauth"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xauth is required in CI:", err)
		}
		t.Skip("xauth not installed")
	}
	if out, err := exec.CommandContext(t.Context(), "xauth", "-f", file, "add", display, ".", cookie).CombinedOutput(); err != nil {
		t.Fatalf("xauth add: %v\n%s", err, out)
	}
}

// The handshake sends the cookie Chromium would: a server that requires
// one lets in the client whose Xauthority holds it and refuses the others,
// with the server's reason.
func TestX11HandshakeCookie(t *testing.T) {
	dir := t.TempDir()
	const cookie = "0123456789abcdef0123456789abcdef"
	serverAuth := filepath.Join(dir, "server")
	xauthAdd(t, serverAuth, ":0", cookie)
	// -noreset: the server would otherwise regenerate when the last client
	// leaves and drop the next connection meanwhile.
	display := displaytest.Xvfb(t, "", "-noreset", "-auth", serverAuth)

	good := filepath.Join(dir, "good")
	xauthAdd(t, good, display, cookie)
	wrong := filepath.Join(dir, "wrong")
	xauthAdd(t, wrong, display, "fedcba9876543210fedcba9876543210")
	for _, tc := range []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{"right cookie", map[string]string{"XAUTHORITY": good}, true},
		{"right cookie in HOME", map[string]string{"HOME": homeWith(t, good)}, true},
		{"wrong cookie", map[string]string{"XAUTHORITY": wrong}, false},
		{"no Xauthority", map[string]string{"HOME": t.TempDir()}, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := x11Handshake(ctx, display, func(k string) string { return tc.env[k] })
		cancel()
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "refused")) {
			t.Errorf("%s: err = %v, want the server's refusal", tc.name, err)
		}
	}
}

// homeWith is a home directory whose .Xauthority is a copy of file.
func homeWith(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".Xauthority"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestParseX11Display(t *testing.T) {
	for in, want := range map[string]x11Display{
		":0":                    {"", "0"},
		":1.0":                  {"", "1"},
		"unix:3":                {"unix", "3"},
		"localhost:10.0":        {"localhost", "10"},
		"tcp/example.org:2":     {"example.org", "2"},
		"/tmp/launch-x/org.x:0": {"/tmp/launch-x/org.x", "0"},
	} {
		got, err := parseX11Display(in)
		if err != nil || got != want {
			t.Errorf("parseX11Display(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", ":", ":x", "host:-1"} {
		if _, err := parseX11Display(bad); err == nil {
			t.Errorf("parseX11Display(%q) accepted", bad)
		}
	}
}
