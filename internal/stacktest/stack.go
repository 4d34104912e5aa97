package stacktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
)

// ReviewDelay is the key-ahead guard the kit's engines use unless told
// otherwise. The CLI enforces 250 ms at the least; the engine accepts less
// so tests stay short, and the Operator still waits it out, as a person
// would.
const ReviewDelay = 20 * time.Millisecond

// LaunchTimeout bounds a Chromium launch unless Config says otherwise
// (generous: the machine may be loaded).
const LaunchTimeout = 90 * time.Second

// Config is the stack a test wants. The zero value is the usual
// end-to-end stack: engine with ReviewDelay and an in-memory audit, a
// headless Chromium on a fresh profile gated by that engine, no policy.
type Config struct {
	// Engine configures the consent engine. Zero ReviewDelay: ReviewDelay.
	// Nil Audit: an audittest.Memory (Stack.Audit).
	Engine consent.Config
	// Browser configures the launch. Headless is always set and Gate is
	// always the engine. Empty ProfileDir: a fresh directory the kit
	// removes.
	Browser browser.Options
	// LaunchTimeout bounds the launch. Zero: LaunchTimeout.
	LaunchTimeout time.Duration
}

// Stack is one consent engine and one Chromium it gates.
type Stack struct {
	Engine  *consent.Engine
	Browser *browser.Browser
	// Audit is the engine's audit when Config left it nil (reviews shown,
	// decisions, take-overs); nil otherwise.
	Audit *audittest.Memory
	// ProfileDir is Chromium's profile (its DevToolsActivePort lives there).
	ProfileDir string

	reviewDelay time.Duration // the engine's key-ahead guard
	dir         string        // made by the kit, removed at Close
	// sites, when the stack is shared, holds the fixture sites still
	// closing in the background; Close waits for them.
	sites *sync.WaitGroup
}

// Start launches a stack for t alone; it ends at t's cleanup. A machine
// without Chromium skips the test (fails it under CI).
func Start(t testing.TB, cfg Config) *Stack {
	t.Helper()
	fixturetest.NeedChromium(t)
	s, err := Launch(cfg)
	if err != nil {
		t.Fatalf("launch the stack: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Launch starts a stack outside any one test (a world a package's tests
// share, built once); the caller Closes it, in TestMain at the latest.
// Start is the usual way.
func Launch(cfg Config) (*Stack, error) {
	s := &Stack{}
	ec := cfg.Engine
	if ec.ReviewDelay == 0 {
		ec.ReviewDelay = ReviewDelay
	}
	if ec.Audit == nil {
		s.Audit = &audittest.Memory{}
		ec.Audit = s.Audit
	}
	bo := cfg.Browser
	if bo.ProfileDir == "" {
		dir, err := os.MkdirTemp("", "tabwarden-stacktest-")
		if err != nil {
			return nil, err
		}
		s.dir = dir
		bo.ProfileDir = filepath.Join(dir, "profile")
	}
	s.ProfileDir = bo.ProfileDir
	limit := cfg.LaunchTimeout
	if limit == 0 {
		limit = LaunchTimeout
	}
	s.reviewDelay = ec.ReviewDelay
	s.Engine = consent.New(ec)
	bo.Headless, bo.Gate = true, s.Engine
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	br, err := browser.Launch(ctx, bo)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("launch Chromium: %w", err)
	}
	s.Browser = br
	return s, nil
}

// Close ends Chromium (the browser ends the process it started, by its
// pid), waits for the shared stack's sites, closes the engine and removes
// the profile the kit made.
func (s *Stack) Close() {
	if s.Browser != nil {
		_ = s.Browser.Close()
	}
	if s.sites != nil {
		s.sites.Wait()
	}
	if s.Engine != nil {
		s.Engine.Close()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// Site starts a fixture origin for t: its own port, so its own request
// log, the witness of what reached the site. On a shared stack it closes
// in the background, since net/http waits up to 5 s for the sockets
// Chromium preconnects and never uses, and the stack's Close waits for it
// after Chromium is gone.
func (s *Stack) Site(t testing.TB) *fixture.Server {
	t.Helper()
	if s.sites == nil {
		return fixturetest.Start(t)
	}
	site, err := fixture.New()
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	t.Cleanup(func() {
		s.sites.Add(1)
		go func() {
			defer s.sites.Done()
			site.Close()
		}()
	})
	return site
}

// Shared is one stack for a whole test binary, launched on first use (so
// a package's browser-free tests never pay for it): the machine is small
// and a launch costs seconds. Isolation comes from everything else being
// per test: conversations, dispatchers, sites. TestMain closes it:
//
//	var stack = &stacktest.Shared{}
//
//	func TestMain(m *testing.M) { os.Exit(stack.Run(m)) }
type Shared struct {
	Config Config

	once  sync.Once
	stack *Stack
	err   error
	sites sync.WaitGroup
}

// Stack returns the shared stack, launching it on first use.
func (sh *Shared) Stack(t testing.TB) *Stack {
	t.Helper()
	fixturetest.NeedChromium(t)
	sh.once.Do(func() {
		sh.stack, sh.err = Launch(sh.Config)
		if sh.stack != nil {
			sh.stack.sites = &sh.sites
		}
	})
	if sh.err != nil {
		t.Fatalf("launch the shared stack: %v", sh.err)
	}
	return sh.stack
}

// Launched is the shared stack if a test launched it, else nil.
func (sh *Shared) Launched() *Stack { return sh.stack }

// Run runs the tests, then closes the stack: TestMain's body.
func (sh *Shared) Run(m *testing.M) int {
	code := m.Run()
	sh.Close()
	return code
}

// Close ends the shared stack if it was launched.
func (sh *Shared) Close() {
	if sh.stack != nil {
		sh.stack.Close()
	}
}
