package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Endpoint is what a running console publishes for local relays and
// scripts: where it listens and the default agent token.
type Endpoint struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
	// Operator is the secret that mints named agent tokens at OperatorPath
	// (`tabwarden connect`); the relay never sends it.
	Operator string `json:"operator,omitempty"`
}

// EndpointFile is the file name inside each endpoint directory.
const EndpointFile = "mcp.json"

// EndpointDir is where this process publishes first: $XDG_RUNTIME_DIR/tabwarden,
// else /run/user/UID/tabwarden when that runtime directory exists, else
// <os.TempDir()>/tabwarden-<uid>. The fallback name is fixed (not
// os.MkdirTemp's random suffix) so `tabwarden mcp-stdio` can find it; since
// another user could create that name first in a shared /tmp, a directory is
// used only when it is a real directory (not a symlink) owned by this user
// with no group or other permissions.
func EndpointDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "tabwarden")
	}
	if d := userRuntimeDir(); d != "" {
		return filepath.Join(d, "tabwarden")
	}
	return tempEndpointDir()
}

// HomeEndpointDir is the copy every console also publishes, for relays whose
// host strips the environment down to HOME and PATH (Codex, the TypeScript
// SDK's stdio client): $HOME/.local/state/tabwarden/run. Empty without HOME.
func HomeEndpointDir() string {
	home := os.Getenv("HOME")
	if !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, ".local", "state", "tabwarden", "run")
}

func userRuntimeDir() string {
	d := "/run/user/" + strconv.Itoa(os.Getuid())
	if fi, err := os.Stat(d); err == nil && fi.IsDir() {
		return d
	}
	return ""
}

func tempEndpointDir() string {
	return filepath.Join(os.TempDir(), "tabwarden-"+strconv.Itoa(os.Getuid()))
}

// EndpointPath is the endpoint file's path in EndpointDir.
func EndpointPath() string { return filepath.Join(EndpointDir(), EndpointFile) }

// EndpointSearchPath lists, in order and without repeats, the files a relay
// looks at: EndpointPath, the user's /run/user runtime directory, the HOME
// copy, and the temporary-directory fallback. A console started with a full
// environment and a relay started with only HOME and PATH meet in one of them.
func EndpointSearchPath() []string {
	dirs := []string{EndpointDir()}
	if d := userRuntimeDir(); d != "" {
		dirs = append(dirs, filepath.Join(d, "tabwarden"))
	}
	dirs = append(dirs, HomeEndpointDir(), tempEndpointDir())
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, EndpointFile)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// publishDirs are where WriteEndpoint writes: EndpointDir and the HOME copy.
func publishDirs() []string {
	dirs := []string{EndpointDir()}
	if h := HomeEndpointDir(); h != "" && h != dirs[0] {
		dirs = append(dirs, h)
	}
	return dirs
}

// WriteEndpoint publishes url and token in every publish directory
// (EndpointDir, and HomeEndpointDir when HOME is set; directories 0700, files
// 0600, each replaced atomically) and returns the first path.
func WriteEndpoint(url, token string) (string, error) {
	return PublishEndpoint(Endpoint{URL: url, Token: token})
}

// PublishEndpoint is WriteEndpoint with every field of ep (PID is set to
// this process's). An endpoint file that names another console still
// running is that console's: it is left alone and this process publishes
// beside it as mcp-PID.json (OwnEndpointFile), which `tabwarden connect
// --endpoint` and `mcp-stdio --endpoint` accept. So a second console never
// takes the first one's place, and quitting it never leaves the first one
// unfound.
func PublishEndpoint(ep Endpoint) (string, error) {
	ep.PID = os.Getpid()
	data, err := json.MarshalIndent(ep, "", "  ")
	if err != nil {
		return "", err
	}
	var first string
	for _, dir := range publishDirs() {
		name := EndpointFile
		if other, err := ReadEndpointFile(filepath.Join(dir, EndpointFile)); err == nil &&
			other.PID > 0 && other.PID != ep.PID && processAlive(other.PID) {
			name = OwnEndpointFile(ep.PID)
		}
		path, err := writeEndpointIn(dir, name, data)
		if err != nil {
			return "", err
		}
		if first == "" {
			first = path
		}
	}
	return first, nil
}

// OwnEndpointFile is the name a console publishes under when another
// running console holds EndpointFile.
func OwnEndpointFile(pid int) string { return "mcp-" + strconv.Itoa(pid) + ".json" }

func writeEndpointIn(dir, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("endpoint directory: %w", err)
	}
	if err := checkPrivateDir(dir); err != nil {
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
	path := filepath.Join(dir, name)
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("endpoint file: %w", err)
	}
	return path, nil
}

// ReadEndpoint reads EndpointPath. A console that is not running gives an
// error wrapping fs.ErrNotExist.
func ReadEndpoint() (Endpoint, error) { return ReadEndpointFile(EndpointPath()) }

// ReadEndpointFile reads one endpoint file, refusing one in a directory
// another user could read or replace.
func ReadEndpointFile(path string) (Endpoint, error) {
	// A file that is not there is said as such, before its directory's
	// mode (a missing /nonexistent used to blame "/").
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return Endpoint{}, err
	}
	if err := checkPrivateDir(filepath.Dir(path)); err != nil {
		return Endpoint{}, err
	}
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

// ErrNoEndpoint is wrapped by FindEndpoint's error when no file on the search
// path names a running console.
var ErrNoEndpoint = errors.New("no endpoint file names a running console")

// FindEndpoint walks EndpointSearchPath and returns the first endpoint whose
// console process is alive, with the file it came from. Its error names every
// place it looked and what it found there.
func FindEndpoint() (Endpoint, string, error) {
	eps, paths, err := LiveEndpoints()
	if err != nil {
		return Endpoint{}, "", err
	}
	return eps[0], paths[0], nil
}

// LiveEndpoints is every live endpoint file on EndpointSearchPath, in its
// order, with its path; ErrNoEndpoint (saying where it looked) when none.
// Two consoles of one user can both be live (another HOME, a
// --endpoint-dir): a relay with a token picks the one that accepts it.
func LiveEndpoints() ([]Endpoint, []string, error) {
	var looked, paths []string
	var eps []Endpoint
	for _, path := range EndpointSearchPath() {
		ep, err := ReadEndpointFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			looked = append(looked, path+" (none)")
		case err != nil:
			looked = append(looked, path+" ("+err.Error()+")")
		case ep.PID > 0 && !processAlive(ep.PID):
			looked = append(looked, fmt.Sprintf("%s (stale: console pid %d is gone)", path, ep.PID))
		default:
			eps, paths = append(eps, ep), append(paths, path)
		}
	}
	if len(eps) == 0 {
		return nil, nil, fmt.Errorf("%w; looked in %s", ErrNoEndpoint, strings.Join(looked, ", "))
	}
	return eps, paths, nil
}

// processAlive reports whether pid names a process (EPERM: alive, not ours).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RemoveEndpoint removes the endpoint files this process published for url:
// a file another console wrote (even for the same stable address) is
// that console's to remove.
func RemoveEndpoint(url string) error {
	var errs []error
	for _, dir := range publishDirs() {
		for _, name := range []string{EndpointFile, OwnEndpointFile(os.Getpid())} {
			path := filepath.Join(dir, name)
			ep, err := ReadEndpointFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err == nil && (ep.URL != url || ep.PID != os.Getpid()) {
				continue
			}
			// An unreadable file naming nobody is ours to clean up too.
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
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
