package main

import (
	"os"
	"path/filepath"
)

// xdgDir returns $env, else $HOME/fallback (the XDG base directory rule: a
// relative value is invalid and ignored).
func xdgDir(env, fallback string) string {
	if d := os.Getenv(env); filepath.IsAbs(d) {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, fallback)
}

func stateDir() string { return filepath.Join(xdgDir("XDG_STATE_HOME", ".local/state"), "tabwarden") }
func dataDir() string  { return filepath.Join(xdgDir("XDG_DATA_HOME", ".local/share"), "tabwarden") }

// profileDir is the persistent Chromium profile (design.md §3). Nothing in
// tabwarden ever deletes it.
func (o *options) profileDir() string {
	if o.profile != "" {
		return o.profile
	}
	return filepath.Join(dataDir(), "profile")
}

// logPath is where the console logs while the TUI owns the terminal.
func logPath() string { return filepath.Join(stateDir(), "tabwarden.log") }
