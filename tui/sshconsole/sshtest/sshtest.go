// Package sshtest is the operator's side of an SSH console in tests: an
// operator's key and its authorized_keys file, and a session with a pty
// whose output drives a terminal emulator, so a test reads the screen the
// operator sees and every byte that drew it. It imports nothing of
// tabwarden, so sshconsole's own tests use it too. Only tests import it;
// the binary never links it (cmd/tabwarden's TestBinaryLinksNoTesting).
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	gossh "golang.org/x/crypto/ssh"
)

// Key is one operator's SSH key.
type Key struct {
	Name   string
	Signer gossh.Signer
	Line   string // the authorized_keys line naming Name
}

// NewKey makes a fresh ed25519 key for the operator name.
func NewKey(t testing.TB, name string) Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey()))) + " " + name
	return Key{Name: name, Signer: s, Line: line}
}

// Fingerprint is the key's SHA256 fingerprint, as the audit names it.
func (k Key) Fingerprint() string { return gossh.FingerprintSHA256(k.Signer.PublicKey()) }

// WriteAuthorizedKeys writes path as an authorized_keys file naming keys.
func WriteAuthorizedKeys(t testing.TB, path string, keys ...Key) {
	t.Helper()
	var lines []string
	for _, k := range keys {
		lines = append(lines, k.Line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Options shape a session. The zero value is user "root" (the console
// ignores the name), any host key, TERM xterm-256color, 120×40, one dial,
// 20 s waits.
type Options struct {
	User    string
	HostKey gossh.HostKeyCallback // nil: any host key
	Term    string
	Width   int
	Height  int
	Env     map[string]string // sent with setenv before the pty (COLORTERM…)
	// DialFor keeps dialing this long while the console is not listening
	// yet (one started in tmux). Zero: one dial.
	DialFor time.Duration
	// WaitLimit bounds the Wait methods and each dial. Zero: 20 s.
	WaitLimit time.Duration
}

// Screen is one operator's SSH session with a pty, its output fed to a
// terminal emulator. It closes at the test's cleanup; its reader
// goroutine ends with the session.
type Screen struct {
	t      testing.TB
	limit  time.Duration
	client *gossh.Client
	sess   *gossh.Session
	stdin  io.WriteCloser
	done   chan struct{}
	wrote  chan struct{}

	mu    sync.Mutex
	emu   *vt.Emulator
	bytes int
	raw   strings.Builder // every byte the session wrote
}

// Attach dials addr as k and opens a shell on a pty.
func Attach(t testing.TB, addr string, k Key, o Options) *Screen {
	t.Helper()
	if o.User == "" {
		o.User = "root"
	}
	if o.HostKey == nil {
		o.HostKey = gossh.InsecureIgnoreHostKey()
	}
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	if o.Width == 0 || o.Height == 0 {
		o.Width, o.Height = 120, 40
	}
	if o.WaitLimit == 0 {
		o.WaitLimit = 20 * time.Second
	}
	cfg := &gossh.ClientConfig{User: o.User, Auth: []gossh.AuthMethod{gossh.PublicKeys(k.Signer)}, HostKeyCallback: o.HostKey, Timeout: o.WaitLimit}
	var c *gossh.Client
	for deadline := time.Now().Add(o.DialFor); ; time.Sleep(200 * time.Millisecond) {
		var err error
		if c, err = gossh.Dial("tcp", addr, cfg); err == nil {
			break
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("ssh %s as %s: %v", addr, k.Name, err)
		}
	}
	sess, err := c.NewSession()
	if err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	s := &Screen{t: t, limit: o.WaitLimit, client: c, sess: sess, done: make(chan struct{}), wrote: make(chan struct{}, 1), emu: vt.NewEmulator(o.Width, o.Height)}
	for name, v := range o.Env {
		_ = sess.Setenv(name, v)
	}
	if err := sess.RequestPty(o.Term, o.Height, o.Width, gossh.TerminalModes{}); err != nil {
		s.closeConn()
		t.Fatal(err)
	}
	if s.stdin, err = sess.StdinPipe(); err != nil {
		s.closeConn()
		t.Fatal(err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		s.closeConn()
		t.Fatal(err)
	}
	// The emulator's own replies to queries are drained, not sent: tests
	// that need a reply send it themselves.
	go func() { _, _ = io.Copy(io.Discard, s.emu) }()
	go func() {
		defer close(s.done)
		buf := make([]byte, 32*1024)
		for {
			n, err := stdout.Read(buf)
			if n > 0 {
				s.mu.Lock()
				_, _ = s.emu.Write(buf[:n])
				s.bytes += n
				s.raw.Write(buf[:n])
				s.mu.Unlock()
				select {
				case s.wrote <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	if err := sess.Shell(); err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *Screen) closeConn() {
	_ = s.sess.Close()
	_ = s.client.Close()
}

// Close ends the session and waits for its reader. The emulator is not
// closed: its Close races with the drain goroutine's Read inside vt; that
// goroutine ends with the test binary.
func (s *Screen) Close() {
	s.closeConn()
	<-s.done
}

// Text is the screen as the operator sees it.
func (s *Screen) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.String()
}

// Styled is the screen with its colours and attributes, as escapes.
func (s *Screen) Styled() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.Render()
}

// Raw is every byte the session wrote, escapes and all.
func (s *Screen) Raw() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

// Bytes counts the bytes the session wrote.
func (s *Screen) Bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Wrote signals (coalescing) after output reached the emulator.
func (s *Screen) Wrote() <-chan struct{} { return s.wrote }

// Done is closed when the session's output has ended.
func (s *Screen) Done() <-chan struct{} { return s.done }

// Send types b, as the operator's keyboard would.
func (s *Screen) Send(b string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, b); err != nil {
		s.t.Fatalf("send %q: %v", b, err)
	}
}

// WaitFor waits until the screen shows want.
func (s *Screen) WaitFor(want string) {
	s.t.Helper()
	s.wait(want, func() bool { return strings.Contains(s.Text(), want) })
}

// WaitUntil waits until ok holds of the screen's text and styled form;
// what names it in the failure.
func (s *Screen) WaitUntil(what string, ok func(text, styled string) bool) {
	s.t.Helper()
	s.wait(what, func() bool { return ok(s.Text(), s.Styled()) })
}

func (s *Screen) wait(what string, ok func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(s.limit)
	for !ok() {
		if time.Now().After(deadline) {
			s.t.Fatalf("the SSH screen never showed %s; it shows:\n%s", what, s.Text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitRaw waits until the session's output holds want and returns it.
func (s *Screen) WaitRaw(what, want string) string {
	s.t.Helper()
	deadline := time.Now().Add(s.limit)
	for {
		if out := s.Raw(); strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the session never wrote %s (%q)", what, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
