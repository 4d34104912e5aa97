package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

func TestEndpointRoundTripAndModes(t *testing.T) {
	rt := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("HOME", t.TempDir())
	path, err := WriteEndpoint("http://127.0.0.1:1234/mcp", "tw_secret")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(rt, "tabwarden", "mcp.json"); path != want || EndpointPath() != want {
		t.Fatalf("path %q, EndpointPath %q, want %q", path, EndpointPath(), want)
	}
	assertMode(t, filepath.Dir(path), 0o700)
	assertMode(t, path, 0o600)
	ep, err := ReadEndpoint()
	if err != nil || ep.URL != "http://127.0.0.1:1234/mcp" || ep.Token != "tw_secret" || ep.PID != os.Getpid() {
		t.Fatalf("ReadEndpoint = %+v, %v", ep, err)
	}

	// Another console's file is not ours to remove.
	if err := RemoveEndpoint("http://127.0.0.1:9/mcp"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("removed a file naming another console: %v", err)
	}
	if err := RemoveEndpoint(ep.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEndpoint(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after remove: %v, want not-exist", err)
	}
}

func TestEndpointFallbackDirIsPrivate(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("TMPDIR", tmp)
	want := filepath.Join(tmp, "tabwarden-"+strconv.Itoa(os.Getuid()), "mcp.json")
	if EndpointPath() != want {
		t.Fatalf("EndpointPath = %q, want %q", EndpointPath(), want)
	}
	if _, err := ReadEndpoint(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no console: %v, want not-exist", err)
	}
	if _, err := WriteEndpoint("http://127.0.0.1:1/mcp", "tw_x"); err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Dir(want), 0o700)

	// A directory others can read (as another user could pre-create in a
	// shared /tmp) is refused for writing and for reading.
	if err := os.Chmod(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteEndpoint("http://127.0.0.1:1/mcp", "tw_x"); err == nil {
		t.Fatal("wrote the token into a directory others can read")
	}
	if _, err := ReadEndpoint(); err == nil {
		t.Fatal("read an endpoint from a directory others can write")
	}
}

func TestStartPublishesAndCloseRemovesEndpoint(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	eng := consent.New(consent.Config{})
	defer eng.Close()
	s, err := New(Config{Surface: newFakeSurface(), Engine: eng, PublishEndpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ep, err := ReadEndpoint()
	if err != nil || ep.URL != url || ep.Token != s.DefaultToken().Secret || s.DefaultToken().Name != DefaultTokenName {
		t.Fatalf("published %+v (%v); url %s", ep, err, url)
	}
	s.Close()
	if _, err := ReadEndpoint(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("endpoint after Close: %v", err)
	}
}

func TestStartStopsWithContext(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	eng := consent.New(consent.Config{})
	defer eng.Close()
	surface := newFakeSurface()
	s, err := New(Config{Surface: surface, Engine: eng, PublishEndpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	url, err := s.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A live conversation, so that the close the context starts has a
	// witness of its own: Close below would otherwise do all the work and
	// the test would pass with the context ignored.
	stacktest.CallTool(t, stacktest.Connect(t, url, s.DefaultToken().Secret, sessionlessVersion, "ctx-bound"), "browser_tabs", nil)
	conv := surface.Calls()[0].Conv
	cancel()
	stacktest.WaitState(t, eng, "the conversation ended by the context alone", func(st consent.State) bool { return !hasConv(conv)(st) })
	if _, err := s.MintToken("late"); !errors.Is(err, ErrClosed) {
		t.Fatalf("mint after ctx end: %v", err)
	}
	// Close waits for the close the context started; once it returns the
	// endpoint is gone.
	s.Close()
	if _, err := ReadEndpoint(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("endpoint after ctx end: %v", err)
	}
}

func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Fatalf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}

func TestEndpointHomeCopyAndSearch(t *testing.T) {
	rt, home := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", t.TempDir())
	if _, err := WriteEndpoint("http://127.0.0.1:1234/mcp", "tw_secret"); err != nil {
		t.Fatal(err)
	}
	homeFile := filepath.Join(home, ".local", "state", "tabwarden", "run", "mcp.json")
	assertMode(t, homeFile, 0o600)
	assertMode(t, filepath.Dir(homeFile), 0o700)

	// With only HOME left, the search finds the HOME copy.
	t.Setenv("XDG_RUNTIME_DIR", "")
	ep, from, err := FindEndpoint()
	if err != nil || from != homeFile || ep.Token != "tw_secret" {
		t.Fatalf("FindEndpoint = %+v from %q, %v", ep, from, err)
	}

	// A file left by a console that is gone is skipped, and said so.
	dead := Endpoint{URL: "http://127.0.0.1:1/mcp", Token: "tw_dead", PID: deadPID(t)}
	data, _ := json.Marshal(dead)
	if err := os.WriteFile(homeFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = FindEndpoint()
	if !errors.Is(err, ErrNoEndpoint) || !strings.Contains(err.Error(), homeFile+" (stale: console pid") {
		t.Fatalf("FindEndpoint over a stale file: %v", err)
	}

	// Close removes both copies.
	t.Setenv("XDG_RUNTIME_DIR", rt)
	if _, err := WriteEndpoint("http://127.0.0.1:1234/mcp", "tw_secret"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveEndpoint("http://127.0.0.1:1234/mcp"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{EndpointPath(), homeFile} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after RemoveEndpoint: %v", p, err)
		}
	}
}

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "true")
	if err := cmd.Run(); err != nil {
		t.Fatal("start `true`:", err)
	}
	return cmd.Process.Pid
}
