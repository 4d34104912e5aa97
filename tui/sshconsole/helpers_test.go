package sshconsole

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

const (
	waitLimit = 15 * time.Second
	termW     = 120
	termH     = 40
	// testDelay is the key-ahead guard of the test engines.
	testDelay = 300 * time.Millisecond
)

// rig is an engine with one conversation (c1, tab t1 selected) served by
// an SSH console on a loopback port.
type rig struct {
	t       testing.TB
	eng     *consent.Engine
	mem     *audittest.Memory
	srv     *Server
	hostKey gossh.PublicKey
}

func newRig(t testing.TB, keys ...sshtest.Key) *rig {
	t.Helper()
	return newRigWith(t, nil, keys...)
}

func newRigWith(t testing.TB, tweak func(*Config, *consent.Config), keys ...sshtest.Key) *rig {
	t.Helper()
	dir := t.TempDir()
	keysPath := filepath.Join(dir, "authorized_keys")
	sshtest.WriteAuthorizedKeys(t, keysPath, keys...)
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

func (r *rig) dial(k sshtest.Key) (*gossh.Client, error) {
	return gossh.Dial("tcp", r.srv.Addr().String(), &gossh.ClientConfig{
		// The user name is whatever the client says; it must not matter.
		User:            "root",
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(k.Signer)},
		HostKeyCallback: gossh.FixedHostKey(r.hostKey),
		Timeout:         waitLimit,
	})
}

// screen is one operator's SSH session with a PTY, its output fed to a
// terminal emulator so tests read what the operator sees.
type screen = sshtest.Screen

func (r *rig) attach(k sshtest.Key) *screen {
	r.t.Helper()
	return r.attachTerm(k, "xterm-256color")
}

// attachTerm is attach with the pty's TERM the client sends; the console's
// own host key is the only one accepted.
func (r *rig) attachTerm(k sshtest.Key, term string) *screen {
	r.t.Helper()
	return sshtest.Attach(r.t, r.srv.Addr().String(), k, sshtest.Options{
		HostKey: gossh.FixedHostKey(r.hostKey), Term: term, Width: termW, Height: termH, WaitLimit: waitLimit,
	})
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
