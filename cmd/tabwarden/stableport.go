package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tabwarden/tabwarden/agent/mcpserver"
)

// The default MCP endpoint is stable per user (design.md §3): the first
// console picks a free loopback port and keeps it in the state directory;
// every later console listens there again, so a configuration pasted into
// a host once keeps working after a restart. A taken port is an error that
// says who holds it, never a silent new port (a silent one would break
// every configuration without a word).

// stablePortFile is where the port is kept.
func stablePortFile() string { return filepath.Join(stateDir(), "mcp-port") }

// mcpListenAddr is the address the MCP server listens on: flag when given
// (stable false), else 127.0.0.1 at the kept port, or at a free one the
// first time.
func mcpListenAddr(flag string) (addr string, stable bool, err error) {
	if flag != "" {
		return flag, false, nil
	}
	data, err := os.ReadFile(stablePortFile())
	if errors.Is(err, fs.ErrNotExist) {
		return mcpserver.DefaultListen, true, nil
	}
	if err != nil {
		return "", true, fmt.Errorf("read the kept MCP port: %w", err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || port < 1 || port > 65535 {
		return "", true, fmt.Errorf("%s holds no port (%q); remove it to choose a new one", stablePortFile(), strings.TrimSpace(string(data)))
	}
	return "127.0.0.1:" + strconv.Itoa(port), true, nil
}

// keepStablePort records the port of the endpoint URL the server listens
// at, once: a kept port is never replaced.
func keepStablePort(endpoint string) error {
	path := stablePortFile()
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" {
		return fmt.Errorf("endpoint %q has no port", endpoint)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // another console kept one first
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(u.Port() + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// portTaken says who holds this user's stable port and what to do.
func portTaken(addr string) error {
	holder, own := "another program", "--mcp-listen 127.0.0.1:0"
	if ep, path, err := mcpserver.FindEndpoint(); err == nil {
		if u, err := url.Parse(ep.URL); err == nil && u.Host == addr {
			holder = fmt.Sprintf("the tabwarden console pid %d (its endpoint file: %s)", ep.PID, path)
			// That console's Chromium holds the default profile too.
			own = "--mcp-listen 127.0.0.1:0 --profile DIR"
		}
	}
	return fmt.Errorf("the MCP address %s — this user's stable endpoint, kept in %s — is taken by %s; "+
		"stop it first, or run this console beside it with %s "+
		"(hosts configured for %s will not reach it)", addr, stablePortFile(), holder, own, addr)
}

// portFree checks that the stable address can be listened on now.
func portFree(ctx context.Context, addr string) error {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp4", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return portTaken(addr)
	}
	if err != nil {
		return fmt.Errorf("mcp server: listen on %s: %w", addr, err)
	}
	return ln.Close()
}
