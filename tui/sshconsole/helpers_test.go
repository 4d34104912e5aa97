package sshconsole

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
)

const (
	waitLimit = 15 * time.Second
	termW     = 120
	termH     = 40
	// testDelay is the key-ahead guard of the test engines.
	testDelay = 300 * time.Millisecond
)

type operatorKey struct {
	name   string
	signer gossh.Signer
	line   string // authorized_keys line
}

func newKey(t testing.TB, name string) operatorKey {
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
	return operatorKey{name: name, signer: s, line: line}
}

func (k operatorKey) fingerprint() string { return gossh.FingerprintSHA256(k.signer.PublicKey()) }

// rig is an engine with one conversation (c1, tab t1 selected) served by
// an SSH console on a loopback port.
type rig struct {
	t       testing.TB
	eng     *consent.Engine
	mem     *audittest.Memory
	srv     *Server
	hostKey gossh.PublicKey
}

func newRig(t testing.TB, keys ...operatorKey) *rig {
	t.Helper()
	return newRigWith(t, nil, keys...)
}

func newRigWith(t testing.TB, tweak func(*Config, *consent.Config), keys ...operatorKey) *rig {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for _, k := range keys {
		lines = append(lines, k.line)
	}
	keysPath := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(keysPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mem := &audittest.Memory{}
	ecfg := consent.Config{ReviewDelay: testDelay, ReviewTimeout: time.Minute, OpDeadline: time.Minute, Audit: mem}
	cfg := Config{Addr: "127.0.0.1:0", AuthorizedKeys: keysPath, Version: "test"}
	if tweak != nil {
		tweak(&cfg, &ecfg)
	}
	eng := consent.New(ecfg)
	eng.AddConversation("c1", "agent-one")
	eng.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "about:blank"})
	eng.Select("c1", "t1")
	hostKey := filepath.Join(dir, "data", "tabwarden", HostKeyFile)
	cfg.HostKey = hostKey
	srv, err := Start(context.Background(), eng, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(hostKey)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := gossh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, eng: eng, mem: mem, srv: srv, hostKey: hk.PublicKey()}
	t.Cleanup(func() {
		_ = srv.Close()
		eng.Close()
	})
	return r
}

func (r *rig) dial(k operatorKey) (*gossh.Client, error) {
	return gossh.Dial("tcp", r.srv.Addr().String(), &gossh.ClientConfig{
		// The user name is whatever the client says; it must not matter.
		User:            "root",
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(k.signer)},
		HostKeyCallback: gossh.FixedHostKey(r.hostKey),
		Timeout:         waitLimit,
	})
}

// screen is one operator's SSH session with a PTY, its output fed to a
// terminal emulator so tests read what the operator sees.
type screen struct {
	t      testing.TB
	client *gossh.Client
	sess   *gossh.Session
	stdin  io.WriteCloser
	mu     sync.Mutex
	emu    *vt.Emulator
	bytes  int
	raw    strings.Builder // every byte the session wrote
	done   chan struct{}
	// wrote signals (coalescing) after output reached the emulator.
	wrote chan struct{}
}

func (r *rig) attach(k operatorKey) *screen {
	r.t.Helper()
	return r.attachTerm(k, "xterm-256color")
}

// attachTerm is attach with the pty's TERM the client sends.
func (r *rig) attachTerm(k operatorKey, term string) *screen {
	r.t.Helper()
	c, err := r.dial(k)
	if err != nil {
		r.t.Fatalf("dial as %s: %v", k.name, err)
	}
	sess, err := c.NewSession()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := sess.RequestPty(term, termH, termW, gossh.TerminalModes{}); err != nil {
		r.t.Fatal(err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	s := &screen{t: r.t, client: c, sess: sess, stdin: stdin, emu: vt.NewEmulator(termW, termH), done: make(chan struct{}), wrote: make(chan struct{}, 1)}
	// The emulator's own replies to queries are drained, not sent: the
	// adversarial tests send crafted replies themselves.
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
		r.t.Fatal(err)
	}
	r.t.Cleanup(s.close)
	return s
}

func (s *screen) close() {
	_ = s.sess.Close()
	_ = s.client.Close()
	<-s.done
	// The emulator is not closed: its Close races with the drain
	// goroutine's Read inside vt; that goroutine ends with the test binary.
}

// text is the screen as the operator sees it.
func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.String()
}

// waitFor waits until the screen shows want.
func (s *screen) waitFor(want string) {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(s.text(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("screen never showed %q; it shows:\n%s", want, s.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rawOut is every byte the session wrote, escapes and all.
func (s *screen) rawOut() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

// waitRaw waits until the session's output holds want.
func (s *screen) waitRaw(what, want string) string {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if out := s.rawOut(); strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the session never wrote %s (%q)", what, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *screen) send(b string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, b); err != nil {
		s.t.Fatalf("send %q: %v", b, err)
	}
}

func ask(e *consent.Engine, req consent.Request) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- e.Ask(context.Background(), req) }()
	return ch
}

func nav(origin string) consent.Request {
	return consent.Request{Gate: consent.GateNavigation, Conversation: "c1", Tab: "t1", Origin: origin}
}

func waitResult(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLimit):
		t.Fatal("Ask did not return")
		return nil
	}
}

func records(mem *audittest.Memory, kind audit.Kind) []audit.Record {
	var out []audit.Record
	for _, r := range mem.Records() {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func focused(t testing.TB, e *consent.Engine) consent.Review {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if st := e.Snapshot(); st.Focused != nil {
			return *st.Focused
		}
		if time.Now().After(deadline) {
			t.Fatal("no review came on screen")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var _ = fmt.Sprintf
