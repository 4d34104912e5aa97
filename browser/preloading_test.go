package browser

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestDisablePreloadingKeepsTheRestOfThePreferences(t *testing.T) {
	profile := t.TempDir()
	path := filepath.Join(profile, "Default", "Preferences")
	if err := disablePreloading(profile); err != nil {
		t.Fatal(err)
	}
	if got := readPrefs(t, path); got != `{"net":{"network_prediction_options":2}}` {
		t.Fatalf("fresh profile: %s", got)
	}
	// The operator turned preloading back on and has settings of their
	// own, one a number too large for a float64 to keep exactly.
	in := `{"browser":{"window":1},"net":{"network_prediction_options":0,"x":true},"big":12345678901234567890}`
	if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := disablePreloading(profile); err != nil {
		t.Fatal(err)
	}
	want := `{"big":12345678901234567890,"browser":{"window":1},"net":{"network_prediction_options":2,"x":true}}`
	if got := readPrefs(t, path); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}

	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCode(t, disablePreloading(profile), errcode.BrowserUnavailable)
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Fatalf("an unreadable Preferences file was replaced: %q", b)
	}
}

func readPrefs(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return string(b)
}
