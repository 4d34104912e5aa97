package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/policy"
)

// Deadlines for CDP calls. Chromium answers these in milliseconds; the
// bounds only keep a wedged browser from wedging the console.
const (
	launchTimeout = 30 * time.Second
	callTimeout   = 10 * time.Second
	closeGrace    = 3 * time.Second
	// loadWait bounds how long Navigate waits for a committed page's load
	// event before returning anyway.
	loadWait = 15 * time.Second
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
	// ExtraFlags are appended to the launch flags.
	ExtraFlags []string
	// Gate is the consent engine. Required.
	Gate Gatekeeper
	// Policy is managed policy, applied by the hook to every request. Nil:
	// unrestricted.
	Policy *policy.Policy
	// TabLimit caps live owned tabs per conversation. Zero: DefaultTabLimit.
	TabLimit int
	// Logger receives operational lines (never site content). Nil: discard.
	Logger *slog.Logger
}

// Browser is one Chromium and the console's view of its tabs. Safe for
// concurrent use.
type Browser struct {
	opts Options
	gate Gatekeeper
	log  *slog.Logger

	rod  *rod.Browser
	ws   *cdp.WebSocket
	proc *process // nil when attached

	ctx    context.Context // lifetime; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	gone   chan struct{} // closed when the connection to Chromium ends

	unlisten func()
	activate chan struct{} // coalescing wake-up of the activation worker
	closeMu  sync.Mutex
	closed   bool

	reg registry
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
	ctx, cancelLaunch := context.WithTimeout(ctx, launchTimeout)
	defer cancelLaunch()

	var proc *process
	wsURL := opts.BrowserURL
	if wsURL != "" {
		u, err := resolveEndpoint(ctx, wsURL)
		if err != nil {
			return nil, unavailable("cannot reach the browser at %s: %v", opts.BrowserURL, err)
		}
		wsURL = u
	} else {
		var err error
		proc, wsURL, err = launchChromium(ctx, &opts)
		if err != nil {
			return nil, err
		}
	}

	b := &Browser{
		opts:     opts,
		gate:     opts.Gate,
		log:      log,
		proc:     proc,
		gone:     make(chan struct{}),
		activate: make(chan struct{}, 1),
	}
	b.reg.init()
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if err := b.connect(ctx, wsURL); err != nil {
		b.cancel()
		if proc != nil {
			proc.stop(0)
		}
		return nil, err
	}
	return b, nil
}

func launchChromium(ctx context.Context, opts *Options) (*process, string, error) {
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
	args = append(args, opts.ExtraFlags...)
	args = append(args, "about:blank")
	return start(ctx, bin, args)
}

// resolveEndpoint accepts a ws:// DevTools URL as is, or asks an http(s)
// endpoint (or bare host:port) for its browser websocket URL.
func resolveEndpoint(ctx context.Context, raw string) (string, error) {
	if strings.HasPrefix(raw, "ws://") || strings.HasPrefix(raw, "wss://") {
		return raw, nil
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.Path, u.RawQuery = "/json/version", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var v struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&v); err != nil {
		return "", fmt.Errorf("%s: %w", u, err)
	}
	ws, err := url.Parse(v.WebSocketDebuggerURL)
	if err != nil || ws.Host == "" {
		return "", fmt.Errorf("%s gave no webSocketDebuggerUrl", u)
	}
	// Chromium names itself by the address it bound; the operator may
	// reach it through another (a tunnel), so keep the host they gave.
	ws.Host = u.Host
	return ws.String(), nil
}

func (b *Browser) connect(ctx context.Context, wsURL string) error {
	ws := &cdp.WebSocket{}
	if err := ws.Connect(ctx, wsURL, nil); err != nil {
		return unavailable("connect to Chromium DevTools: %v", err)
	}
	b.ws = ws
	client := cdp.New().Start(ws)
	b.rod = rod.New().Client(client).Context(b.ctx).NoDefaultDevice()
	// rod's event hub; subscribe before anything can happen so no target
	// or paused request is missed.
	if err := b.rod.Connect(); err != nil {
		ws.Close()
		return unavailable("connect to Chromium DevTools: %v", err)
	}
	events := b.rod.Event()

	// The hook goes on before any tab can be created by us; the Fetch
	// domain lives on the browser session, so it covers every target,
	// including a popup's first request.
	enable := proto.FetchEnable{Patterns: []*proto.FetchRequestPattern{{
		URLPattern:   "*",
		RequestStage: proto.FetchRequestStageRequest,
	}}}
	if err := enable.Call(b.rod.Context(ctx)); err != nil {
		ws.Close()
		return unavailable("enable the request hook: %v", err)
	}

	if b.blocksUploads() {
		// Every new target waits for guardTarget before its first script,
		// so no page can open a WebSocket ahead of the block.
		auto := proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true}
		if err := auto.Call(b.rod.Context(ctx)); err != nil {
			ws.Close()
			return unavailable("guard new tabs for the upload policy: %v", err)
		}
	}

	b.unlisten = b.gate.Listen(b.onConsentEvent)
	b.wg.Add(2)
	go b.loop(events)
	go b.activationWorker()
	return nil
}

// loop is the single reader of CDP events. It only updates in-memory state
// and hands everything that talks to Chromium or waits on the operator to
// another goroutine.
func (b *Browser) loop(events <-chan *rod.Message) {
	defer b.wg.Done()
	defer close(b.gone)
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
			if msg.SessionID == "" && b.blocksUploads() && msg.Load(e) && e.TargetInfo != nil {
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					b.guardTarget(e)
				}()
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

// go runs f on a tracked goroutine unless the Browser is closing.
func (b *Browser) spawn(f func()) {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if b.closed {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// call bounds one CDP call by callTimeout and the Browser's lifetime.
func (b *Browser) call(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = b.ctx
	}
	ctx, cancel := context.WithTimeout(parent, callTimeout)
	stop := context.AfterFunc(b.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// Done is closed when the connection to Chromium has ended (crash, exit or
// Close); every later operation fails browser_unavailable.
func (b *Browser) Done() <-chan struct{} { return b.gone }

func (b *Browser) alive() error {
	select {
	case <-b.gone:
		return unavailable("the browser is not running")
	default:
		return nil
	}
}

// PID is the launched Chromium's pid (its process group id), 0 when attached.
func (b *Browser) PID() int {
	if b.proc == nil {
		return 0
	}
	return b.proc.pid
}

// ProfileDir is the profile in use ("" when attached).
func (b *Browser) ProfileDir() string {
	if b.proc == nil {
		return ""
	}
	return b.opts.ProfileDir
}

// Close ends the Browser: a launched Chromium is asked to close (so the
// profile is flushed), then its process group is killed; an attached
// Chromium loses the tabs this console created and keeps running. Close
// returns after every goroutine the Browser started has ended. It never
// touches the profile directory.
func (b *Browser) Close() error {
	b.closeMu.Lock()
	if b.closed {
		b.closeMu.Unlock()
		return nil
	}
	b.closed = true
	b.closeMu.Unlock()

	b.unlisten()
	if b.proc == nil {
		// Closing our tabs first: once the connection drops, the Fetch
		// domain goes with it and a held request would be let through.
		for _, t := range b.reg.ownedTargets() {
			ctx, cancel := b.call(nil)
			_, _ = proto.TargetCloseTarget{TargetID: t}.Call(b.rod.Context(ctx))
			cancel()
		}
	} else {
		ctx, cancel := b.call(nil)
		_ = proto.BrowserClose{}.Call(b.rod.Context(ctx))
		cancel()
	}
	b.cancel()
	_ = b.ws.Close()
	if b.proc != nil {
		b.proc.stop(closeGrace)
	}
	b.wg.Wait()
	return nil
}

func (b *Browser) String() string {
	if b.proc == nil {
		return fmt.Sprintf("attached %s", b.opts.BrowserURL)
	}
	return fmt.Sprintf("chromium pid %d profile %s", b.proc.pid, b.opts.ProfileDir)
}
