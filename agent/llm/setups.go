package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Setup is a named provider setup in the providers file. It never holds a
// key: KeyEnv names the environment variable to read it from.
type Setup struct {
	Provider string `json:"provider"`
	BaseURL  string `json:"baseURL,omitempty"`
	Model    string `json:"model"`
	// KeyEnv is the variable holding the key; empty: OPENAI_API_KEY or
	// ANTHROPIC_API_KEY by provider.
	KeyEnv string `json:"keyEnv,omitempty"`
	// Images is "on", "off" or empty (the capability table).
	Images string `json:"images,omitempty"`
}

// SetupsFile is the providers file under dir ($XDG_CONFIG_HOME/tabwarden).
func SetupsFile(dir string) string { return filepath.Join(dir, "providers.json") }

// LoadSetups reads the providers file: {"setups": {"name": Setup, …}}.
// A missing file is no setups.
func LoadSetups(path string) (map[string]Setup, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f struct {
		Setups map[string]Setup `json:"setups"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for name, s := range f.Setups {
		if s.Provider != ProviderOpenAI && s.Provider != ProviderAnthropic {
			return nil, fmt.Errorf("%s: setup %q: provider %q: use openai or anthropic", path, name, s.Provider)
		}
		if s.Images != "" && s.Images != "on" && s.Images != "off" {
			return nil, fmt.Errorf("%s: setup %q: images %q: use on or off", path, name, s.Images)
		}
	}
	return f.Setups, nil
}

// SetupNames lists the names of setups, sorted.
func SetupNames(m map[string]Setup) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
