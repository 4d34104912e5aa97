package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/browser/wall"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/policy"
	"github.com/tabwarden/tabwarden/webmcp"
)

// DefaultTabLimit is how many live tabs one conversation may own (ref).
const DefaultTabLimit = 12

// Gatekeeper is the part of the consent engine the browser layer calls;
// *consent.Engine satisfies it.
type Gatekeeper interface {
	Ask(ctx context.Context, req consent.Request) error
	PutTab(t consent.TabInfo)
	RemoveTab(id consent.TabID)
	Paused(conv consent.ConversationID) bool
	Note(conv consent.ConversationID, text string, warn bool)
	Listen(fn func(consent.Event)) func()
}

var _ Gatekeeper = (*consent.Engine)(nil)

// Options configure Launch. The zero value launches a headed system
// Chromium on the default profile with no policy and a consent engine that
// must be supplied (Gate is required).
type Options struct {
	// Chromium is the binary (--chromium). Empty: $TABWARDEN_CHROMIUM, then
	// PATH. Never downloaded.
	Chromium string
	// ProfileDir is the persistent profile (--profile). Empty:
	// DefaultProfileDir(). Created 0700; never deleted.
	ProfileDir string
	// Headless runs without a window (--headless, CI and servers).
	Headless bool
	// BrowserURL attaches to a running Chromium (ws:// or http:// DevTools
	// endpoint) instead of launching one; Chromium, ProfileDir, Headless
	// and ExtraFlags are then ignored and Close leaves that Chromium running.
	BrowserURL string
	// BrowserToken is the fleet engine's credential (--browser-token),
	// sent in the Authorization header of every request to BrowserURL. It
	// is never shown: see ShownURL.
	BrowserToken string
	// HandshakeTimeout bounds an attach's wait for its websocket (a fleet
	// engine queues by holding the upgrade). Zero: two minutes.
	HandshakeTimeout time.Duration
	// Waiting, when set, is told (once per attach) that the fleet engine
	// is queueing the console, with the line to show; the header says it
	// too.
	Waiting func(string)
	// ExtraFlags are appended to the launch flags.
	ExtraFlags []string
	// Gate is the consent engine. Required.
	Gate Gatekeeper
	// Unshown keeps this Browser out of the engine's header: a second
	// Chromium beside the console's own (the demo's policy run) would
	// otherwise write the header's one browser field too, and whichever
	// wrote last would win.
	Unshown bool
	// Policy is managed policy, applied by the hook to every request. Nil:
	// unrestricted.
	Policy *policy.Policy
	// TabLimit caps live owned tabs per conversation. Zero: DefaultTabLimit.
	TabLimit int
	// Logger receives operational lines (never site content). Nil: discard.
	Logger *slog.Logger
	// SiteToolMode picks native WebMCP or the polyfill for the tabs' site
	// tools; zero: auto-detect.
	SiteToolMode webmcp.Mode
}

// Browser is the console's Chromium and its view of the tabs. Safe for
// concurrent use. A Browser is one object for the console's whole life:
// when a launched Chromium dies, its connection is replaced by a relaunched
// one behind the same *Browser (see relaunch), so callers never re-wire.
type Browser struct {
	opts Options
	gate Gatekeeper
	log  *slog.Logger

	ctx    context.Context // lifetime; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	unlisten func()
	activate chan struct{} // coalescing wake-up of the activation worker

	// mu guards the connection swap and the closing state.
	mu          sync.Mutex
	cur         *conn
	relaunching bool
	closed      bool
	// gaps are what an attached browser cannot guarantee (hardening.go).
	gaps []string
	// grid is the Selenium Grid session behind the connection (grid.go),
	// deleted on Close.
	grid *gridSession

	// held are the hook's navigation questions in flight, by
	// conversation; take-over cancels them.
	heldMu sync.Mutex
	held   map[consent.ConversationID]map[*int]context.CancelFunc

	reg registry
	// sites runs every handle's site-tool calls (handle.go).
	sites *webmcp.Broker

	// hold parks main-frame requests waiting for a review (hold.go).
	hold *holdServer

	// mark is the action review's mark on screen (mark.go).
	mark marker
}

// conn is one DevTools connection to one Chromium.
type conn struct {
	rod  *rod.Browser
	ws   *wsConn
	proc *process      // nil when attached
	gone chan struct{} // closed when the connection to Chromium ends

	events <-chan *rod.Message
}

// Launch starts (or, with BrowserURL, attaches to) Chromium, enables the
// request hook and starts tracking tabs. ctx bounds the launch only.
func Launch(ctx context.Context, opts Options) (*Browser, error) {
	if opts.Gate == nil {
		return nil, errors.New("browser: Options.Gate is required")
	}
	if opts.TabLimit <= 0 {
		opts.TabLimit = DefaultTabLimit
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.BrowserURL != "" {
		return attach(ctx, opts, log)
	}
	ctx, cancelLaunch := context.WithTimeout(ctx, cdpedge.Launch)
	defer cancelLaunch()
	// The hold exists before Chromium does: the wall lets Chromium reach
	// it, and nothing else of ours.
	hold, err := startHold()
	if err != nil {
		return nil, unavailable("start the navigation hold: %v", err)
	}
	proc, wsURL, err := launchChromium(ctx, &opts, log, hold)
	if err != nil {
		hold.close()
		return nil, err
	}
	return open(ctx, opts, log, proc, wsURL, hold)
}

// open is the rest of Launch once Chromium's DevTools endpoint is known:
// the Browser on the connection to wsURL, proc being the Chromium behind it
// (nil: attached), hold the navigation hold it was launched with. On
// failure proc is stopped and hold closed.
func open(ctx context.Context, opts Options, log *slog.Logger, proc *process, wsURL string, hold *holdServer) (*Browser, error) {
	b := &Browser{
		opts:     opts,
		gate:     opts.Gate,
		log:      log,
		activate: make(chan struct{}, 1),
		held:     map[consent.ConversationID]map[*int]context.CancelFunc{},
	}
	b.reg.init()
	b.sites = webmcp.NewBroker(webmcp.Options{})
	b.hold = hold
	b.ctx, b.cancel = context.WithCancel(context.Background())
	c, err := b.connect(ctx, wsURL, proc)
	if err != nil {
		b.cancel()
		hold.close()
		if proc != nil {
			proc.stop(0)
		}
		return nil, err
	}
	b.cur = c
	b.run(c)
	b.unlisten = b.gate.Listen(b.onConsentEvent)
	b.wg.Add(1)
	go b.activationWorker()
	b.showStatus(b.describe(ctx, c))
	if proc == nil {
		// Never silently (design.md §14): the operator reads what this
		// console cannot hold in an attached browser.
		b.gate.Note("", "Network wall "+WallAttached+".", true)
		b.noteGaps(ctx, c)
	}
	return b, nil
}

// launchChromium starts Chromium behind a wall of its own (see
// startWall), which the returned process owns; hold is the navigation hold
// the wall lets it reach. Every Browser passes its hold; nil (no wall) is
// for the benchmarks' bare Chromium, the floor the wall is measured
// against.
func launchChromium(ctx context.Context, opts *Options, log *slog.Logger, hold *holdServer) (*process, string, error) {
	bin, err := FindChromium(opts.Chromium)
	if err != nil {
		return nil, "", err
	}
	if err := CheckDisplay(opts.Headless); err != nil {
		return nil, "", err
	}
	profile := opts.ProfileDir
	if profile == "" {
		if profile, err = DefaultProfileDir(); err != nil {
			return nil, "", unavailable("%v", err)
		}
	}
	if err := os.MkdirAll(profile, 0o700); err != nil {
		return nil, "", unavailable("profile %s: %v", profile, err)
	}
	opts.ProfileDir = profile
	if err := CheckProfileLock(profile); err != nil {
		return nil, "", err
	}
	if err := disablePreloading(profile); err != nil {
		return nil, "", err
	}
	args := append([]string{}, baseFlags...)
	args = append(args, "--user-data-dir="+profile, "--remote-debugging-port=0")
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox; outside root
		// the sandbox stays on.
		args = append(args, "--no-sandbox")
	}
	if opts.Headless {
		args = append(args, "--headless=new")
	}
	args = mergeFeatureFlags(append(args, withoutNetworkFlags(opts.ExtraFlags, log)...))
	var wl *wall.Wall
	if hold != nil {
		if wl, err = startWall(opts.Policy, log, hold); err != nil {
			return nil, "", err
		}
		args = append(args, wl.ChromiumFlags()...)
	}
	args = append(args, "about:blank")
	proc, wsURL, err := start(ctx, bin, args)
	if err != nil {
		if wl != nil {
			_ = wl.Close()
		}
		return nil, "", err
	}
	proc.wall = wl
	return proc, wsURL, nil
}

// dial opens the DevTools websocket at wsURL: plainly for a Chromium we
// launched (proc), under the attach handshake's rules otherwise.
func (b *Browser) dial(ctx context.Context, wsURL string, proc *process) (*wsConn, error) {
	if proc == nil {
		return b.dialAttached(ctx, wsURL)
	}
	ws, _, err := dialCDP(ctx, wsURL, nil)
	if err != nil {
		return nil, unavailable("connect to Chromium DevTools: %v", err)
	}
	return ws, nil
}

// connect opens a DevTools connection with the request hook enabled and
// starts its event loop. proc is the Chromium behind wsURL (nil: attached).
func (b *Browser) connect(ctx context.Context, wsURL string, proc *process) (*conn, error) {
	ws, err := b.dial(ctx, wsURL, proc)
	if err != nil {
		return nil, err
	}
	// The launch deadline counts from the handshake: a fleet engine may
	// have queued it for minutes.
	ctx, cancel := context.WithTimeout(ctx, cdpedge.Launch)
	defer cancel()
	client := cdp.New().Start(ws)
	c := &conn{ws: ws, proc: proc, gone: make(chan struct{})}
	c.rod = rod.New().Client(client).Context(b.ctx).NoDefaultDevice()
	// rod's event hub; subscribe before anything can happen so no target
	// or paused request is missed.
	if err := c.rod.Connect(); err != nil {
		ws.Close()
		return nil, unavailable("connect to Chromium DevTools: %v", err)
	}
	events := c.rod.Event()

	// The hook goes on before any tab can be created by us; the Fetch
	// domain lives on the browser session, so it covers every target,
	// including a popup's first request.
	if hookOn {
		if err := b.hookPatterns().Call(c.rod.Context(ctx)); err != nil {
			ws.Close()
			return nil, unavailable("enable the request hook: %v", err)
		}
	}

	// Every new target waits for guardTarget before its first script, so
	// no page can open a file chooser (uploads blocked) before it is
	// intercepted.
	auto := proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true}
	if b.blocksUploads() {
		if err := auto.Call(c.rod.Context(ctx)); err != nil {
			ws.Close()
			return nil, unavailable("guard new tabs for the upload policy: %v", err)
		}
	}

	c.events = events
	return c, nil
}

// run starts c's event loop; c must already be b.cur, since the handlers
// reach Chromium through b.rod().
func (b *Browser) run(c *conn) {
	b.wg.Add(1)
	go b.loop(c, c.events)
}

// loop is the single reader of CDP events. It only updates in-memory state
// and hands everything that talks to Chromium or waits on the operator to
// another goroutine.
func (b *Browser) loop(c *conn, events <-chan *rod.Message) {
	defer b.wg.Done()
	defer b.lost(c)
	for msg := range events {
		switch msg.Method {
		case "Fetch.requestPaused":
			if msg.SessionID != "" {
				continue // only the browser-level hook exists
			}
			e := &proto.FetchRequestPaused{}
			if !msg.Load(e) {
				continue
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.onPaused(e)
			}()
		case "Target.targetCreated":
			e := &proto.TargetTargetCreated{}
			if msg.Load(e) {
				b.onTargetInfo(e.TargetInfo, true)
			}
		case "Target.targetInfoChanged":
			e := &proto.TargetTargetInfoChanged{}
			if msg.Load(e) {
				b.onTargetInfo(e.TargetInfo, false)
			}
		case "Target.attachedToTarget":
			e := &proto.TargetAttachedToTarget{}
			if !msg.Load(e) || e.TargetInfo == nil {
				continue
			}
			switch {
			case msg.SessionID == "" && b.blocksUploads():
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					b.guardTarget(e)
				}()
			case msg.SessionID != "" && b.onFrameTarget(msg.SessionID, e):
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					b.followFrame(e)
				}()
			}
		case "Target.detachedFromTarget":
			e := &proto.TargetDetachedFromTarget{}
			if msg.SessionID != "" && msg.Load(e) {
				b.reg.mu.Lock()
				delete(b.reg.oopifs, e.SessionID)
				b.reg.mu.Unlock()
			}
		case "Page.fileChooserOpened":
			b.onFileChooser(msg.SessionID)
		case "Page.frameAttached":
			e := &proto.PageFrameAttached{}
			if msg.Load(e) {
				b.onFrameAttached(msg.SessionID, e.FrameID)
			}
		case "Page.frameDetached":
			e := &proto.PageFrameDetached{}
			// A frame swapped into another process lives on (its new
			// process's target attaches with the same id); only a frame
			// removed is gone.
			if msg.Load(e) && e.Reason != proto.PageFrameDetachedReasonSwap {
				b.reg.mu.Lock()
				delete(b.reg.frames, e.FrameID)
				b.reg.mu.Unlock()
			}
		case "Page.lifecycleEvent":
			e := &proto.PageLifecycleEvent{}
			if msg.Load(e) {
				b.onLifecycle(msg.SessionID, e)
			}
		case "Target.targetDestroyed":
			e := &proto.TargetTargetDestroyed{}
			if msg.Load(e) {
				b.onTargetDestroyed(e.TargetID)
			}
		}
	}
}

// spawn runs f on a tracked goroutine unless the Browser is closing.
func (b *Browser) spawn(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// call bounds one CDP call by cdpedge.Call and the Browser's lifetime.
func (b *Browser) call(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = b.ctx
	}
	ctx, cancel := context.WithTimeout(parent, cdpedge.Call)
	stop := context.AfterFunc(b.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// conn returns the current connection.
func (b *Browser) conn() *conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

// rod is the current connection's rod client. A call made on it after
// Chromium died simply fails; the caller's error path reports
// browser_unavailable through alive.
func (b *Browser) rod() *rod.Browser { return b.conn().rod }

// Done is closed when the current connection to Chromium has ended (crash,
// exit or Close). After a relaunch, Done is the new connection's.
func (b *Browser) Done() <-chan struct{} { return b.conn().gone }

// alive is every operation's first step. When the connection is gone it
// fails browser_unavailable and, for a Chromium this console launched,
// starts a relaunch if none is running: the first operation after a crash
// is the one that notices, and it fails too (nothing waits for a launch).
func (b *Browser) alive() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return unavailable("the browser is closed")
	}
	select {
	case <-b.cur.gone:
	default:
		return nil
	}
	if b.cur.proc == nil {
		return unavailable("the browser at %s is gone; the console is attaching again, try again shortly", ShownURL(b.opts.BrowserURL))
	}
	if !b.relaunching {
		b.relaunching = true
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.relaunch()
		}()
	}
	return unavailable("Chromium is not running; it is being relaunched, try again shortly")
}

// Available is alive for callers above the registry: nil while Chromium
// is up; browser_unavailable after a crash, the first call starting the
// relaunch. The dispatch calls it before any tool, because after a crash
// the engine already reports the dead tabs as closed and only this says
// why.
func (b *Browser) Available() error { return b.alive() }

// PID is the launched Chromium's pid (its process group id), 0 when attached.
func (b *Browser) PID() int {
	c := b.conn()
	if c.proc == nil {
		return 0
	}
	return c.proc.pid
}

// ProfileDir is the profile in use ("" when attached).
func (b *Browser) ProfileDir() string {
	if b.opts.BrowserURL != "" {
		return ""
	}
	return b.opts.ProfileDir
}

// Close ends the Browser: a launched Chromium is asked to close (so the
// profile is flushed), then its process group is killed; an attached
// Chromium loses the tabs this console created and keeps running. A
// relaunch in progress is abandoned and its Chromium killed. Close returns
// after every goroutine the Browser started has ended. It never touches the
// profile directory.
func (b *Browser) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	c := b.cur
	b.mu.Unlock()

	b.unlisten()
	if c.proc == nil {
		// Closing our tabs first: once the connection drops, the Fetch
		// domain goes with it and a held request would be let through.
		for _, t := range b.reg.ownedTargets() {
			ctx, cancel := b.call(b.ctx)
			_, _ = proto.TargetCloseTarget{TargetID: t}.Call(c.rod.Context(ctx))
			cancel()
		}
	} else {
		ctx, cancel := b.call(b.ctx)
		_ = proto.BrowserClose{}.Call(c.rod.Context(ctx))
		cancel()
	}
	b.cancel()
	b.hold.close()
	c.teardown(cdpedge.Close)
	b.releaseAll()
	b.wg.Wait()
	b.mu.Lock()
	grid := b.grid
	b.grid = nil
	b.mu.Unlock()
	grid.delete()
	return nil
}

// teardown drops the connection and ends its Chromium (if launched),
// waiting up to grace for a clean exit.
func (c *conn) teardown(grace time.Duration) {
	_ = c.ws.Close()
	if c.proc != nil {
		c.proc.stop(grace)
	}
}

// String is the header's browser field: groups joined by " · ", the most
// important first, since a narrow header drops them from the end (tui
// header.go).
func (b *Browser) String() string {
	c := b.conn()
	if c.proc == nil {
		return b.attachedStatus()
	}
	return fmt.Sprintf("Chromium %s · pid %d · profile %s", b.mode(), c.proc.pid, b.opts.ProfileDir)
}

// mode is the header's word for a launched Chromium: a headless console
// says so at all times, so nobody looks for a window that is not there.
func (b *Browser) mode() string {
	if b.opts.Headless {
		return "headless (no window)"
	}
	return "headed"
}

// attachedStatus is the header's field for an attached browser: that it
// has no network wall comes before its address, so no width drops it.
func (b *Browser) attachedStatus() string {
	return "attached, " + WallAttachedShort + " · " + ShownURL(b.opts.BrowserURL)
}
