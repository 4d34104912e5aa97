// Package browsertest is the rod-side hands of tests outside browser/: a
// bare Chromium (no hook, no policy, no consent) for liveness witnesses,
// and the few CDP moves a test makes on a console tab as the person or the
// page would. Only tests import it; the binary never links it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/leakless"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
)

// BareFlags are the flags design.md §3 mandates for every Chromium, taken
// from browser.Launch's own list: the bare browser differs from
// tabwarden's only in having no request hook, no policy and no consent
// engine behind it.
var BareFlags = append(browser.LaunchFlags(), "--headless=new")

// Bare is a Chromium launched directly, driven over plain CDP.
type Bare struct {
	cmd     *exec.Cmd // leakless, Chromium's parent
	pid     chan int  // Chromium's pid (and process group), from leakless
	profile string
	rod     *rod.Browser
}

// LaunchBare starts a bare Chromium on a fresh profile; ctx bounds the
// launch. Close ends it and removes the profile.
func LaunchBare(ctx context.Context) (*Bare, error) {
	bin, err := browser.FindChromium("")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tabwarden-corpus-bare-")
	if err != nil {
		return nil, err
	}
	args := append([]string{}, BareFlags...)
	args = append(args, "--user-data-dir="+dir, "--remote-debugging-port=0")
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	args = append(args, "about:blank")
	// leakless ends Chromium if this test binary dies without cleaning up.
	ll := leakless.New()
	cmd := ll.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := &Bare{cmd: cmd, profile: dir, pid: make(chan int, 1)}
	go func() { b.pid <- <-ll.Pid() }()
	// Chromium writes its port and browser path once DevTools listens.
	var ws string
	for ws == "" {
		if raw, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if lines := strings.Split(strings.TrimSpace(string(raw)), "\n"); len(lines) == 2 {
				ws = "ws://127.0.0.1:" + lines[0] + lines[1]
				break
			}
		}
		select {
		case <-ctx.Done():
			b.Close()
			return nil, fmt.Errorf("bare Chromium opened no DevTools port: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	b.rod = rod.New().ControlURL(ws)
	if err := b.rod.Connect(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close ends the bare Chromium and removes its profile.
func (b *Bare) Close() {
	if b.rod != nil {
		_ = b.rod.Close()
	}
	if b.cmd.Process != nil {
		// Chromium leads its own process group under leakless: end it,
		// then leakless's.
		select {
		case pid := <-b.pid:
			if pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		case <-time.After(time.Second):
		}
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		_ = b.cmd.Wait()
	}
	_ = os.RemoveAll(b.profile)
}

// BarePage is a tab of the bare Chromium.
type BarePage struct{ p *rod.Page }

// Open creates a tab at url; ctx bounds every call on it.
func (b *Bare) Open(ctx context.Context, url string) (*BarePage, error) {
	p, err := b.rod.Context(ctx).Page(proto.TargetCreateTarget{URL: url})
	if err != nil {
		return nil, err
	}
	return &BarePage{p}, nil
}

// Close closes the tab.
func (p *BarePage) Close() error { return p.p.Close() }

// Click is a trusted mouse click at x,y (user activation, as a person's),
// bounded by ctx.
func (p *BarePage) Click(ctx context.Context, x, y float64) error {
	pg := p.p.Context(ctx)
	for _, typ := range []proto.InputDispatchMouseEventType{proto.InputDispatchMouseEventTypeMousePressed, proto.InputDispatchMouseEventTypeMouseReleased} {
		if err := (proto.InputDispatchMouseEvent{Type: typ, X: x, Y: y, Button: proto.InputMouseButtonLeft, ClickCount: 1}).Call(pg); err != nil {
			return err
		}
	}
	return nil
}

// Eval evaluates expr in the bare page (the bare browser only: this is
// the liveness probe, tabwarden is never driven this way) and returns the
// string it resolves to; an exception is an error.
func (p *BarePage) Eval(expr string) (string, error) {
	res, err := proto.RuntimeEvaluate{Expression: expr, AwaitPromise: true, ReturnByValue: true}.Call(p.p)
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", fmt.Errorf("%s", res.ExceptionDetails.Text)
	}
	return res.Result.Value.Str(), nil
}

// SetFile puts the file at path into the file input selector names, as
// the file chooser would.
func (p *BarePage) SetFile(selector, path string) error {
	doc, err := proto.DOMGetDocument{}.Call(p.p)
	if err != nil {
		return err
	}
	node, err := proto.DOMQuerySelector{NodeID: doc.Root.NodeID, Selector: selector}.Call(p.p)
	if err != nil {
		return err
	}
	if node.NodeID == 0 {
		return fmt.Errorf("no %s yet", selector)
	}
	return proto.DOMSetFileInputFiles{Files: []string{path}, NodeID: node.NodeID}.Call(p.p)
}

// EmulateViewport resizes a console tab's viewport as a person resizing
// the window would (Emulation.setDeviceMetricsOverride on its own
// session); restore clears the override. ctx bounds both calls.
func EmulateViewport(ctx context.Context, b *browser.Browser, conv consent.ConversationID, tab consent.TabID, width, height int) (restore func(), err error) {
	page, err := b.Page(ctx, conv, tab)
	if err != nil {
		return nil, err
	}
	page = page.Context(ctx)
	if err := (proto.EmulationSetDeviceMetricsOverride{Width: width, Height: height, DeviceScaleFactor: 1}).Call(page); err != nil {
		return nil, err
	}
	return func() { _ = proto.EmulationClearDeviceMetricsOverride{}.Call(page) }, nil
}

// World is an isolated world of a test's own on a console tab: probes
// that time the page's share of an observation evaluate in it.
type World struct {
	page *rod.Page
	id   proto.RuntimeExecutionContextID
}

// NewWorld creates the isolated world name in tab's main frame; ctx
// bounds every later call too.
func NewWorld(ctx context.Context, b *browser.Browser, conv consent.ConversationID, tab consent.TabID, name string) (*World, error) {
	page, err := b.Page(ctx, conv, tab)
	if err != nil {
		return nil, err
	}
	p := page.Context(ctx)
	tree, err := proto.PageGetFrameTree{}.Call(p)
	if err != nil {
		return nil, err
	}
	w, err := proto.PageCreateIsolatedWorld{FrameID: tree.FrameTree.Frame.ID, WorldName: name}.Call(p)
	if err != nil {
		return nil, err
	}
	return &World{page: p, id: w.ExecutionContextID}, nil
}

// Eval evaluates expr in the world and returns its value as a string; an
// exception is an error.
func (w *World) Eval(expr string) (string, error) {
	res, err := proto.RuntimeEvaluate{Expression: expr, ContextID: w.id, ReturnByValue: true, Silent: true}.Call(w.page)
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", fmt.Errorf("probe: %s", res.ExceptionDetails.Text)
	}
	return res.Result.Value.Str(), nil
}
