package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// displayProbeTimeout bounds one attempt to open the display: a forwarded
// display whose ssh session is gone can leave a TCP connect hanging.
const displayProbeTimeout = 5 * time.Second

// openDisplay connects to the display a headed Chromium would use and
// completes the X11 handshake (authorization included) or the Wayland
// socket connect, so "DISPLAY is set" is never taken for "a display
// answers". It returns nil when Chromium could open a window there.
func openDisplay(ctx context.Context, getenv func(string) string) error {
	ctx, cancel := context.WithTimeout(ctx, displayProbeTimeout)
	defer cancel()
	if w := getenv("WAYLAND_DISPLAY"); w != "" {
		path := w
		if !filepath.IsAbs(path) {
			path = filepath.Join(getenv("XDG_RUNTIME_DIR"), w)
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return fmt.Errorf("no Wayland compositor answers at %s: %w", path, err)
		}
		return conn.Close()
	}
	display := getenv("DISPLAY")
	if display == "" {
		return errors.New("neither $DISPLAY nor $WAYLAND_DISPLAY is set")
	}
	if err := x11Handshake(ctx, display, getenv); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no X server answered on DISPLAY=%s within %s", display, displayProbeTimeout)
		}
		return fmt.Errorf("no X server accepts a connection on DISPLAY=%s: %w", display, err)
	}
	return nil
}

// noDisplayFixes are the ways to run the console when no display answers.
func noDisplayFixes() []string {
	return []string{
		"ssh -X user@host   (reconnect with X forwarding so the window opens on your screen)",
		"xvfb-run -a tabwarden   (a virtual display; you will not see the window)",
		"tabwarden --headless",
	}
}

// realOpenDisplay is openDisplay on this process's environment.
func realOpenDisplay(ctx context.Context) error { return openDisplay(ctx, os.Getenv) }

// needDisplay refuses to launch a headed Chromium when no display answers,
// before Chromium can fail with its own stderr: the error names the reason
// and the fixes. Headless, an attached browser and macOS need no check.
func needDisplay(ctx context.Context, o *options, getenv func(string) string, goos string) error {
	if o.headless || o.browserURL != "" || goos == "darwin" {
		return nil
	}
	if err := openDisplay(ctx, getenv); err != nil {
		fixes := noDisplayFixes()
		for i, f := range fixes {
			// doctor lines these up in a column; a sentence needs one space.
			fixes[i] = strings.Join(strings.Fields(f), " ")
		}
		return fmt.Errorf("headed Chromium needs a display and %v; %s", err, strings.Join(fixes, "; or "))
	}
	return nil
}
