package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Endpoint is what a running console publishes for local relays and
// scripts: where it listens and the default agent token.
type Endpoint struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
}

// EndpointFile is the file name inside EndpointDir.
const EndpointFile = "mcp.json"

// EndpointDir is $XDG_RUNTIME_DIR/tabwarden, or, when XDG_RUNTIME_DIR is
// unset, <os.TempDir()>/tabwarden-<uid>. The fallback name is fixed (not
// os.MkdirTemp's random suffix) so `tabwarden mcp-stdio` can find it; since
// another user could create that name first in a shared /tmp, the directory
// is used only when it is a real directory (not a symlink) owned by this
// user with no group or other permissions.
func EndpointDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "tabwarden")
	}
	return filepath.Join(os.TempDir(), "tabwarden-"+strconv.Itoa(os.Getuid()))
}

// EndpointPath is the endpoint file's path.
func EndpointPath() string { return filepath.Join(EndpointDir(), EndpointFile) }

// WriteEndpoint publishes url and token to EndpointPath (directory 0700,
// file 0600, replaced atomically) and returns the path.
func WriteEndpoint(url, token string) (string, error) {
	dir := EndpointDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("endpoint directory: %w", err)
	}
	if err := checkPrivateDir(dir); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(Endpoint{URL: url, Token: token, PID: os.Getpid()}, "", "  ")
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".mcp-*.json")
	if err != nil {
		return "", fmt.Errorf("endpoint file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", fmt.Errorf("endpoint file: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return "", fmt.Errorf("endpoint file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("endpoint file: %w", err)
	}
	path := filepath.Join(dir, EndpointFile)
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("endpoint file: %w", err)
	}
	return path, nil
}

// ReadEndpoint reads EndpointPath. A console that is not running gives an
// error wrapping fs.ErrNotExist.
func ReadEndpoint() (Endpoint, error) {
	dir := EndpointDir()
	if err := checkPrivateDir(dir); err != nil {
		return Endpoint{}, err
	}
	path := filepath.Join(dir, EndpointFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Endpoint{}, err
	}
	var ep Endpoint
	if err := json.Unmarshal(data, &ep); err != nil {
		return Endpoint{}, fmt.Errorf("%s: %w", path, err)
	}
	if ep.URL == "" || ep.Token == "" {
		return Endpoint{}, fmt.Errorf("%s: no url or token", path)
	}
	return ep, nil
}

// RemoveEndpoint removes the endpoint file if it still names url (a console
// started later may have replaced it with its own).
func RemoveEndpoint(url string) error {
	ep, err := ReadEndpoint()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil && ep.URL != url {
		return nil
	}
	// An unreadable file naming nobody is ours to clean up too.
	if err := os.Remove(EndpointPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// checkPrivateDir refuses a directory another user could read or replace.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; refusing to use it for the MCP endpoint file", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is readable by other users (mode %v); refusing to use it for the MCP endpoint file", dir, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to another user; refusing to use it for the MCP endpoint file", dir)
	}
	return nil
}
