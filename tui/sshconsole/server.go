// Package sshconsole serves the operator's screen over SSH (design.md §11):
// one bubbletea program per SSH session, all on the same consent engine,
// so several operators watch one fleet of agents and any of them answers.
//
// Operators sign in with public keys only, listed in an authorized keys
// file whose comments name them; a session's operator is the one of the
// key the SSH handshake verified, never a name the client sends. Sessions
// need a PTY, end after IdleTimeout without input and after
// MaxSession in any case. Input from a session is untrusted like any
// terminal's: the TUI acts on key presses only, so pastes and terminal
// replies never decide a review.
package sshconsole

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	bm "charm.land/wish/v2/bubbletea"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui"
)

// Session limits (design.md §11). An operator who walks away is signed out;
// nobody stays attached forever.
const (
	DefaultIdleTimeout = 15 * time.Minute
	DefaultMaxSession  = 12 * time.Hour
)

// Config configures the SSH console.
type Config struct {
	// Addr is where to listen (ListenAddr's rules).
	Addr string
	// AuthorizedKeys is the keys file; required. It is read again for
	// every sign-in, so removing a line locks that key out of new sessions.
	AuthorizedKeys string
	// HostKey is the host key file; "": DefaultHostKeyPath.
	HostKey string
	// IdleTimeout ends a session after this long without input; 0: the
	// default. MaxSession ends it after this long in any case; 0: the
	// default.
	IdleTimeout time.Duration
	MaxSession  time.Duration
	// Version is shown in each screen's header.
	Version string
	// Headless: the console's Chromium has no window, so a screen's
	// take-over banner points at the page view, never at a window.
	Headless bool
	// Page is the browser side of the page view; each screen has its own
	// view of it (tui.Options.Page). Nil: no page view.
	Page tui.PageSource
	// PageProtocol is the page view's protocol on every screen
	// (--page-view); auto (or "") lets each screen ask its own terminal,
	// through its session, which protocol it speaks.
	PageProtocol tui.PageProtocol
	// Notify is how each screen calls its operator on a new review
	// (--notify); each screen picks its desktop sequence from its own
	// session's environment.
	Notify tui.NotifyMode
}

// ListenAddr resolves the --ssh-listen value: a bare port (":2222")
// means loopback (127.0.0.1:2222); an explicit host is used as given.
func ListenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("use HOST:PORT or :PORT, e.g. :2222 (loopback) or 0.0.0.0:2222: %v", err)
	}
	if port == "" {
		return "", errors.New("no port: use HOST:PORT or :PORT, e.g. :2222")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Server is a running SSH console.
type Server struct {
	svc  tui.Service
	cfg  Config
	srv  *ssh.Server
	ln   net.Listener
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup // the serve loop and its closer
	// sessions counts running handlers; closed (under mu) stops new ones
	// from joining once Close waits for them.
	mu       sync.Mutex
	closed   bool
	sessions sync.WaitGroup
	// attached counts sessions whose screen is running.
	attached atomic.Int64
	keysPath string
}

// Start checks cfg (keys file, host key, address), listens and serves
// until Close or ctx is done.
func Start(ctx context.Context, svc tui.Service, cfg Config) (*Server, error) {
	if cfg.AuthorizedKeys == "" {
		return nil, ErrNoKeysFile
	}
	if _, err := LoadKeys(cfg.AuthorizedKeys); err != nil {
		return nil, err
	}
	addr, err := ListenAddr(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("--ssh-listen %q: %w", cfg.Addr, err)
	}
	if cfg.HostKey == "" {
		cfg.HostKey = DefaultHostKeyPath()
	}
	hostPEM, err := loadOrCreateHostKey(cfg.HostKey)
	if err != nil {
		return nil, err
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxSession <= 0 {
		cfg.MaxSession = DefaultMaxSession
	}
	s := &Server{svc: svc, cfg: cfg, keysPath: cfg.AuthorizedKeys}
	s.ctx, s.stop = context.WithCancel(ctx)
	srv, err := wish.NewServer(
		wish.WithHostKeyPEM(hostPEM),
		wish.WithPublicKeyAuth(s.allowKey),
		wish.WithMaxTimeout(cfg.MaxSession),
		wish.WithMiddleware(func(ssh.Handler) ssh.Handler { return s.handle }),
	)
	if err != nil {
		s.stop()
		return nil, err
	}
	s.srv = srv
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("--ssh-listen %s: %w", addr, err)
	}
	s.ln = ln
	s.wg.Go(func() { _ = srv.Serve(ln) })
	s.wg.Go(func() {
		<-s.ctx.Done()
		// No session starts after this (handle checks closed under mu
		// before it counts itself), so waiting for them is sound.
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		// A Close that runs before Serve has taken the listener does not
		// close it, and Serve would then accept forever: close it here.
		_ = ln.Close()
		// Each screen stops with the context and restores its client's
		// terminal on the way out; closing the connections first would
		// cut that off and leave the operator's terminal in the
		// alternate screen. The grace bounds a session that hangs.
		ended := make(chan struct{})
		go func() {
			s.sessions.Wait()
			close(ended)
		}()
		grace := time.NewTimer(shutdownGrace)
		select {
		case <-ended:
		case <-grace.C:
		}
		grace.Stop()
		_ = srv.Close()
		<-ended
	})
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close disconnects every session and waits until every screen has ended.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
	s.sessions.Wait()
	return nil
}

// allowKey admits a key listed in the keys file (read afresh each time).
func (s *Server) allowKey(_ ssh.Context, key ssh.PublicKey) bool {
	keys, err := LoadKeys(s.keysPath)
	if err != nil {
		return false
	}
	_, ok := keys.Lookup(key)
	return ok
}

// handle runs one operator's screen for the session.
func (s *Server) handle(sess ssh.Session) {
	s.mu.Lock()
	if s.closed || s.ctx.Err() != nil {
		s.mu.Unlock()
		refuse(sess, "tabwarden: the console is shutting down")
		return
	}
	s.sessions.Add(1)
	s.mu.Unlock()
	defer s.sessions.Done()
	// The key the handshake verified; the user name the client sent plays
	// no part.
	keys, err := LoadKeys(s.keysPath)
	var op consent.Operator
	ok := false
	if err == nil {
		op, ok = keys.Lookup(sess.PublicKey())
	}
	if !ok {
		refuse(sess, "tabwarden: this key is not (or no longer) an operator's")
		return
	}
	_, windows, hasPty := sess.Pty()
	if !hasPty {
		refuse(sess, "tabwarden: the console needs a terminal; connect with ssh -t")
		return
	}
	if len(sess.Command()) > 0 {
		refuse(sess, "tabwarden: only the console is served here; connect without a command")
		return
	}

	ctx, cancel := context.WithCancel(sess.Context())
	defer cancel()
	stopOnServer := context.AfterFunc(s.ctx, cancel)
	defer stopOnServer()

	in := &activityReader{r: sess}
	in.touch()
	opts := tui.Options{
		Version:  s.cfg.Version,
		Operator: op,
		Remote:   true,
		Headless: s.cfg.Headless,
		Page:     s.cfg.Page,
		// Each session's program asks its own client's terminal: the
		// replies come back on this session's input.
		PageProtocol: s.cfg.PageProtocol,
		Notify:       s.cfg.Notify,
		// The session's own input wrapped to see activity; later options
		// win, so it replaces the session input MakeOptions sets.
		Program: append(bm.MakeOptions(sess), tea.WithInput(in), tea.WithoutSignalHandler()),
	}
	p, closeModel := tui.NewProgram(ctx, s.svc, opts)
	defer closeModel()

	var why atomic.Value
	var aux sync.WaitGroup
	defer aux.Wait()
	aux.Go(func() {
		tick := time.NewTicker(min(s.cfg.IdleTimeout/4, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case w, ok := <-windows:
				if !ok {
					windows = nil
					continue
				}
				p.Send(tea.WindowSizeMsg{Width: w.Width, Height: w.Height})
			case <-tick.C:
				if in.idle() >= s.cfg.IdleTimeout {
					why.Store(fmt.Sprintf("tabwarden: no input for %s; signed out", s.cfg.IdleTimeout))
					cancel()
					return
				}
			}
		}
	})

	pr, _ := s.svc.(presence)
	if pr != nil {
		pr.OperatorJoined(op)
	}
	s.attached.Add(1)
	_, _ = p.Run()
	s.attached.Add(-1)
	p.Kill()
	cancel()
	msg, signedOut := why.Load().(string)
	if pr != nil {
		left := "left"
		switch {
		case signedOut:
			left = fmt.Sprintf("signed out after %s without input", s.cfg.IdleTimeout)
		case s.ctx.Err() != nil:
			left = "disconnected: the console is shutting down"
		}
		pr.OperatorLeft(op, left)
	}
	if !signedOut && s.ctx.Err() != nil {
		msg, signedOut = "tabwarden: the console is shutting down", true
	}
	if signedOut {
		// The program was stopped, not quit, so it did not restore the
		// client's terminal: leave the alternate screen, show the cursor
		// and stop mouse reports, or the shell prompt lands on the
		// console's last frame.
		_, _ = io.WriteString(sess, restoreTerminal)
		_, _ = io.WriteString(sess.Stderr(), "\r\n"+msg+"\r\n")
	}
	_ = sess.Exit(0)
}

// shutdownGrace is how long a shutdown waits for the screens to end on
// their own before it closes their connections.
const shutdownGrace = 2 * time.Second

// restoreTerminal undoes what the program set on the client's terminal:
// mouse reporting (cell motion, SGR), the hidden cursor, the alternate
// screen.
const restoreTerminal = "\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?25h\x1b[?1049l"

// presence is the engine's record of operators joining and leaving;
// *consent.Engine has it, a bare tui.Service may not.
type presence interface {
	OperatorJoined(consent.Operator)
	OperatorLeft(consent.Operator, string)
}

var _ presence = (*consent.Engine)(nil)

func refuse(sess ssh.Session, msg string) {
	_, _ = io.WriteString(sess.Stderr(), strings.TrimSpace(msg)+"\r\n")
	_ = sess.Exit(1)
}

// activityReader passes a session's input through and remembers when
// input last arrived, for the idle timeout.
type activityReader struct {
	r    io.Reader
	last atomic.Int64
}

func (a *activityReader) touch() { a.last.Store(time.Now().UnixNano()) }

func (a *activityReader) idle() time.Duration {
	return time.Since(time.Unix(0, a.last.Load()))
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.touch()
	}
	return n, err
}
