package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// x11Display is a parsed $DISPLAY: [protocol/][host]:number[.screen].
type x11Display struct {
	host   string // "" or "unix" for the local socket; a leading "/" is a socket path
	number string
}

func parseX11Display(display string) (x11Display, error) {
	colon := strings.LastIndex(display, ":")
	if colon < 0 {
		return x11Display{}, fmt.Errorf("bad DISPLAY %q: no ':'", display)
	}
	d := x11Display{host: display[:colon]}
	if !strings.HasPrefix(d.host, "/") {
		if slash := strings.LastIndex(d.host, "/"); slash >= 0 {
			d.host = d.host[slash+1:]
		}
	}
	d.number, _, _ = strings.Cut(display[colon+1:], ".")
	if n, err := strconv.Atoi(d.number); err != nil || n < 0 {
		return x11Display{}, fmt.Errorf("bad DISPLAY %q: display number %q", display, d.number)
	}
	return d, nil
}

// dial connects to the display's server: its Unix socket when the host is
// local, else TCP port 6000+number.
func (d x11Display) dial(ctx context.Context) (net.Conn, error) {
	var nd net.Dialer
	switch {
	case strings.HasPrefix(d.host, "/"):
		return nd.DialContext(ctx, "unix", d.host+":"+d.number)
	case d.host == "" || d.host == "unix":
		return nd.DialContext(ctx, "unix", "/tmp/.X11-unix/X"+d.number)
	default:
		n, _ := strconv.Atoi(d.number)
		return nd.DialContext(ctx, "tcp", net.JoinHostPort(d.host, strconv.Itoa(6000+n)))
	}
}

// x11Handshake opens the display and completes the X11 connection setup
// with the cookie Chromium would send (from $XAUTHORITY or ~/.Xauthority),
// then closes the connection. It returns nil when the server accepted us,
// the server's reason when it refused, and ctx's error when it did not
// answer in time.
func x11Handshake(ctx context.Context, display string, getenv func(string) string) error {
	d, err := parseX11Display(display)
	if err != nil {
		return err
	}
	conn, err := d.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return err
		}
	}
	name, data := xauthCookie(getenv, d)
	if _, err := conn.Write(setupRequest(name, data)); err != nil {
		return err
	}
	return readSetupReply(bufio.NewReader(conn))
}

// setupRequest is the client's connection setup, little-endian, protocol
// 11.0, with the authorization protocol name and data (both may be empty).
func setupRequest(name string, data []byte) []byte {
	pad := func(n int) int { return (4 - n%4) % 4 }
	b := make([]byte, 12, 12+len(name)+pad(len(name))+len(data)+pad(len(data)))
	b[0] = 'l'
	binary.LittleEndian.PutUint16(b[2:], 11)
	binary.LittleEndian.PutUint16(b[4:], 0)
	binary.LittleEndian.PutUint16(b[6:], uint16(len(name)))
	binary.LittleEndian.PutUint16(b[8:], uint16(len(data)))
	b = append(b, name...)
	b = append(b, make([]byte, pad(len(name)))...)
	b = append(b, data...)
	return append(b, make([]byte, pad(len(data)))...)
}

// readSetupReply reads the server's answer to the setup: Success (1),
// Failed (0, with a reason) or Authenticate (2, another authorization
// protocol tabwarden does not speak).
func readSetupReply(r io.Reader) error {
	head := make([]byte, 8)
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("X11 setup reply: %w", err)
	}
	rest := make([]byte, 4*int(binary.LittleEndian.Uint16(head[6:])))
	if _, err := io.ReadFull(r, rest); err != nil {
		return fmt.Errorf("X11 setup reply: %w", err)
	}
	switch head[0] {
	case 1:
		return nil
	case 0:
		reason := rest[:min(int(head[1]), len(rest))]
		return fmt.Errorf("the X server refused the connection: %s", strings.TrimSpace(string(reason)))
	case 2:
		return errors.New("the X server asks for further authentication")
	default:
		return fmt.Errorf("X11 setup reply: unknown status %d", head[0])
	}
}

// Xauthority families (X11/Xauth.h).
const (
	xauthFamilyLocal = 256
	xauthFamilyWild  = 65535
)

// xauthCookie finds the authorization entry for d in the Xauthority file:
// one for this host ("localhost" and the local socket mean this host) or a
// wildcard, for d's display number or any. None (no file, no entry) is an
// empty name and data: the server decides whether it lets us in without.
func xauthCookie(getenv func(string) string, d x11Display) (string, []byte) {
	path := getenv("XAUTHORITY")
	if path == "" {
		home := getenv("HOME")
		if home == "" {
			return "", nil
		}
		path = filepath.Join(home, ".Xauthority")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	host := d.host
	if host == "" || host == "unix" || host == "localhost" || strings.HasPrefix(host, "/") {
		if host, err = os.Hostname(); err != nil {
			return "", nil
		}
	}
	r := bufio.NewReader(f)
	for {
		var family uint16
		if err := binary.Read(r, binary.BigEndian, &family); err != nil {
			return "", nil
		}
		var field [4][]byte // address, display number, name, data
		for i := range field {
			if field[i], err = xauthField(r); err != nil {
				return "", nil
			}
		}
		addrOK := family == xauthFamilyWild || (family == xauthFamilyLocal && string(field[0]) == host)
		if addrOK && (len(field[1]) == 0 || string(field[1]) == d.number) {
			return string(field[2]), field[3]
		}
	}
}

// xauthField reads one counted field of an Xauthority entry.
func xauthField(r io.Reader) ([]byte, error) {
	var n uint16
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
