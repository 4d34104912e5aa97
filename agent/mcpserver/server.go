package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// DefaultListen is the listen address when Config.Listen is empty: loopback,
// a free port.
const DefaultListen = "127.0.0.1:0"

// DefaultMaxRequestBytes fits a default 10 MiB upload in base64 plus its
// envelope (design.md §5 --max-upload-bytes); the SDK's own default is 4 MiB.
const DefaultMaxRequestBytes = 16 << 20

// DefaultSessionIdleTimeout is how long a stateful MCP session may go
// without a request before the server ends it (Config.SessionIdleTimeout).
const DefaultSessionIdleTimeout = 30 * time.Minute

// DefaultTokenName names the token minted at Start.
const DefaultTokenName = "default"

// Engine is the part of the consent engine the server needs; *consent.Engine
// satisfies it.
type Engine interface {
	AddConversation(id consent.ConversationID, name string)
	RemoveConversation(id consent.ConversationID)
	Note(conv consent.ConversationID, text string, warn bool)
}

// Config configures a Server.
type Config struct {
	// Surface dispatches every tool call. Required.
	Surface agent.Surface
	// Engine registers and removes conversations. Required.
	Engine Engine
	// Audit receives session starts and ends, token revocations, and the
	// tool calls the server refuses itself (no identity). Nil: no audit.
	Audit audit.Sink
	// AuditToolCalls makes the server also write one record per dispatched
	// tool call. Leave it off with agent.Dispatcher, which writes that
	// record itself for every transport (two records per call would break
	// design.md §9's one-per-call); turn it on for a Surface that does not.
	AuditToolCalls bool
	// Listen is host:port; the host must be a 127.x.x.x address or
	// "localhost" (taken as 127.0.0.1). Empty: DefaultListen. Anything else
	// is refused: the console is never reachable from another machine.
	Listen string
	// PublishEndpoint writes the endpoint file (EndpointPath) with the URL
	// and the default token at Start, and removes it at Close. Off in tests
	// that must not touch the user's runtime directory.
	PublishEndpoint bool
	// MaxRequestBytes caps one HTTP request body. Zero: DefaultMaxRequestBytes.
	// The console sizes it from --max-upload-bytes once browser_upload
	// exists (base64 grows bytes by 4/3).
	MaxRequestBytes int64
	// SessionIdleTimeout ends a stateful MCP session (and so its
	// conversation: ops cancelled, jobs stopped, tabs to the operator) that
	// has had no request in flight for this long, so a client that died
	// without DELETE does not hold its tabs forever. A call waiting on a
	// review counts as in flight; an open GET event stream does not. Zero:
	// DefaultSessionIdleTimeout; negative: sessions never idle out.
	// A sessionless conversation with no call in flight for as long ends
	// the same way.
	SessionIdleTimeout time.Duration
	// Profile is the published tool surface and its instructions
	// (--tools). Nil: agent.Default. The server registers its tools as
	// they are; what a tool is called is the tool's own business.
	Profile *agent.Profile
	// Version is reported as the server's version. Empty: "dev".
	Version string
	// Logger receives transport diagnostics. Nil: discarded.
	Logger *slog.Logger
	// TokenStore is the file named tokens are kept in (TokenStorePath):
	// read at Start, written at each mint and revocation, re-read when it
	// changes. Empty: tokens live in memory and end with the server.
	TokenStore string
	// ProgressInterval is how often a call in flight sends a progress
	// notification to a client that gave a progressToken (caller.go).
	// Zero: DefaultProgressInterval (design.md §5: 5 s); tests shorten it.
	ProgressInterval time.Duration
}

// Errors of the operator-facing API.
var (
	ErrNotStarted   = errors.New("the MCP server is not started")
	ErrClosed       = errors.New("the MCP server is closed")
	ErrTokenExists  = errors.New("an agent token with that name exists")
	ErrUnknownToken = errors.New("no agent token with that name")
	ErrTokenName    = errors.New("a token name is 1-64 letters, digits, '.', '_' or '-'")
)

// Server is the console's MCP server. Safe for concurrent use.
type Server struct {
	cfg       Config
	log       *slog.Logger
	mcp       *mcp.Server
	stateful  *mcp.StreamableHTTPHandler
	stateless *mcp.StreamableHTTPHandler
	// endpointPath is the endpoint file Start published ("" if none).
	endpointPath string
	idle         time.Duration // stateful session idle timeout; 0: never
	// progressEvery is Config.ProgressInterval with its default applied.
	progressEvery time.Duration
	carriers      carriers

	mu       sync.Mutex
	started  bool
	closed   bool
	url      string
	hosts    map[string]bool // allowed Host headers (lower case)
	origins  map[string]bool // allowed Origin headers (lower case)
	http     *http.Server
	serveErr chan error
	stopCtx  func() bool
	tokens   tokenTable
	convs    map[convKey]*conversation
	sessions map[string]*trackedSession // stateful sessions by MCP session id
	// ended holds the ids of stateful sessions that ended, so a call racing
	// the end cannot start a new conversation; one short string per session
	// for the console's life.
	ended    map[string]bool
	endpoint bool // the endpoint file is ours to remove
	// defaultTok is the token minted at Start, kept so the console can show
	// its config line and publish it.
	defaultTok Token
	watchers   sync.WaitGroup
	closeOnce  sync.Once
	answers    answerTable // answer.go

	// posts counts requests other than the GET event stream being served:
	// Close waits for them, so every answer is on the wire before the
	// sessions close. postsIdle is closed when posts drops to zero while
	// Close waits.
	posts     int
	postsIdle chan struct{}

	// storeMu serializes reads of the token store; storeStamp is the
	// version of the file last read (tokenstore.go).
	storeMu    sync.Mutex
	storeStamp storeStamp
	storeStop  chan struct{}
	// idleStop stops idleSessionless (conversations.go).
	idleStop chan struct{}

	// operatorSecret authorizes OperatorPath; it is published only in the
	// endpoint file, never to agents.
	operatorSecret string
}

// answerLinger is how long Close waits between the last answer written and
// closing the sessions' event streams, when calls were in flight.
const answerLinger = 500 * time.Millisecond

// shutdowner is a Surface that can end its in-flight calls with results
// (agent.Dispatcher): Close calls it first.
type shutdowner interface {
	Shutdown(ctx context.Context) error
}

// New validates cfg and builds a Server; nothing listens until Start.
func New(cfg Config) (*Server, error) {
	if cfg.Surface == nil {
		return nil, errors.New("mcpserver: Config.Surface is required")
	}
	if cfg.Engine == nil {
		return nil, errors.New("mcpserver: Config.Engine is required")
	}
	listen, err := LoopbackAddr(cfg.Listen)
	if err != nil {
		return nil, err
	}
	cfg.Listen = listen
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	profile := cfg.Profile
	if profile == nil {
		profile = agent.Default
	}
	s := &Server{
		cfg:      cfg,
		log:      log,
		tokens:   newTokenTable(),
		convs:    make(map[convKey]*conversation),
		sessions: make(map[string]*trackedSession),
		ended:    make(map[string]bool),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "tabwarden", Title: "tabwarden browser console", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: profile.Instructions,
		Logger:       log,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			s.trackSession(req.Session, tokenIDOf(req.Extra))
		},
	})
	for _, tool := range profile.Tools {
		schema, err := tool.InputSchema()
		if err != nil {
			return nil, err
		}
		s.mcp.AddTool(&mcp.Tool{
			Name:        tool.Name,
			Title:       tool.Title,
			Description: tool.Description,
			InputSchema: schema,
			Annotations: &mcp.ToolAnnotations{
				Title:         tool.Title,
				ReadOnlyHint:  tool.ReadOnly,
				OpenWorldHint: new(true),
			},
		}, s.toolHandler(tool))
	}
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	maxBody := cfg.MaxRequestBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxRequestBytes
	}
	idle := cfg.SessionIdleTimeout
	switch {
	case idle == 0:
		idle = DefaultSessionIdleTimeout
	case idle < 0:
		idle = 0 // the SDK's "never"
	}
	s.idle = idle
	s.progressEvery = cmp.Or(max(cfg.ProgressInterval, 0), DefaultProgressInterval)
	s.stateful = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Logger: log, MaxRequestBodyBytes: maxBody, SessionTimeout: idle})
	s.stateless = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		Logger:              log,
		MaxRequestBodyBytes: maxBody,
		// In the sessionless protocol the POST is the whole call: an agent
		// that hangs up has abandoned it, so its operation stops too.
		PropagateRequestCancellation: true,
	})
	return s, nil
}

// LoopbackAddr checks that addr is host:port with a 127.x.x.x host, or
// "localhost" (taken as 127.0.0.1, so the console never depends on how the
// resolver maps the name), and returns it with the IP spelled out.
// Empty: DefaultListen. New applies it to Config.Listen; it is exported so
// the console can refuse an address before it launches a browser.
func LoopbackAddr(addr string) (string, error) {
	if addr == "" {
		return DefaultListen, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") { // host names ignore case
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() || !ip.Is4() {
		return "", fmt.Errorf("listen address %q: the MCP server listens on a 127.x.x.x loopback address only", addr)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// Start listens and serves until Close or until ctx is done, mints the
// default token, publishes the endpoint file when configured, and returns
// the endpoint URL (http://127.0.0.1:<port>/mcp).
func (s *Server) Start(ctx context.Context) (string, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", ErrClosed
	}
	if s.started {
		s.mu.Unlock()
		return "", errors.New("mcpserver: already started")
	}
	s.started = true
	s.mu.Unlock()

	ln, err := new(net.ListenConfig).Listen(ctx, "tcp4", s.cfg.Listen)
	if err != nil {
		return "", fmt.Errorf("mcpserver: listen on %s: %w", s.cfg.Listen, err)
	}
	ap, err := netip.ParseAddrPort(ln.Addr().String())
	if err != nil {
		ln.Close()
		return "", fmt.Errorf("mcpserver: listener address: %w", err)
	}
	port := strconv.Itoa(int(ap.Port()))
	hostport := net.JoinHostPort(ap.Addr().String(), port)
	url := "http://" + hostport + Path

	mux := http.NewServeMux()
	bearer := auth.RequireBearerToken(s.verifyToken, &auth.RequireBearerTokenOptions{
		// Our tokens never expire; they end when revoked or when the console exits.
		AllowMissingExpiration: true,
		// Naming the scope makes the SDK send WWW-Authenticate on a 401.
		Scopes: []string{tokenScope},
	})
	mux.Handle(Path, s.guard(bearer(http.HandlerFunc(s.route))))
	mux.Handle(OperatorPath, s.guard(http.HandlerFunc(s.serveOperator)))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return "", ErrClosed
	}
	s.url = url
	s.operatorSecret = newOperatorSecret()
	s.hosts = map[string]bool{hostport: true, "localhost:" + port: true}
	s.origins = map[string]bool{"http://" + hostport: true, "http://localhost:" + port: true}
	s.http = srv
	s.serveErr = make(chan error, 1)
	s.mu.Unlock()

	go func() { s.serveErr <- srv.Serve(ln) }()

	if s.idle > 0 {
		stop := make(chan struct{})
		s.mu.Lock()
		s.idleStop = stop
		s.mu.Unlock()
		s.watchers.Go(func() { s.idleSessionless(stop, s.idle) })
	}
	if s.cfg.TokenStore != "" {
		s.syncStore()
		stop := make(chan struct{})
		s.mu.Lock()
		s.storeStop = stop
		s.mu.Unlock()
		s.watchers.Go(func() { s.watchStore(stop, time.Second) })
	}
	tok, err := s.MintToken(DefaultTokenName)
	if err != nil {
		s.Close()
		return "", err
	}
	s.mu.Lock()
	s.defaultTok = tok
	s.mu.Unlock()
	if s.cfg.PublishEndpoint {
		path, err := PublishEndpoint(Endpoint{URL: url, Token: tok.Secret, Operator: s.operatorSecret})
		if err != nil {
			s.Close()
			return "", err
		}
		if filepath.Base(path) != EndpointFile {
			s.cfg.Engine.Note("", "another tabwarden console is running and keeps "+EndpointFile+
				"; agents reach this one through its own endpoint file: `tabwarden connect --endpoint "+path+" HOST`, `tabwarden mcp-stdio --endpoint "+path+"`", true)
		}
		s.mu.Lock()
		s.endpoint = true
		s.endpointPath = path
		s.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, s.Close)
	s.mu.Lock()
	s.stopCtx = stop
	s.mu.Unlock()
	return url, nil
}

// DefaultToken is the token minted at Start (zero before Start). It stays
// the same after revocation, when it no longer works.
func (s *Server) DefaultToken() Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.defaultTok
}

// URL is the endpoint URL, "" before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// route sends sessionless-protocol requests to the stateless handler and
// everything else (initialize, session-bound requests, DELETE, the GET
// stream) to the stateful one.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		s.postStarted()
		defer s.postDone()
	}
	w, done := s.watchAnswer(w, r) // answer.go
	defer done()
	if sessionless(r.Header.Get("Mcp-Protocol-Version")) {
		r.Header.Del(carrierHeader) // only the server sets it (caller.go)
		s.stateless.ServeHTTP(w, r)
		return
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" && s.hasEnded(id) {
		// The SDK forgets a closed session only after Wait has returned
		// (and the conversation ended); a request in between would reach
		// the closed session and get an empty 200. Answer as the SDK does
		// for a session it no longer knows, so the client re-initializes.
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodDelete {
		s.noteDelete(r)
		s.endDeleted(r)
	}
	s.carry(r, func(r *http.Request) { s.stateful.ServeHTTP(w, r) })
}

func (s *Server) hasEnded(sessionID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[sessionID]
}

// sessionless reports whether a protocol version is the 2026-07-28
// generation or later. Version strings are dates, so they compare as text.
func sessionless(version string) bool {
	return len(version) == len(sessionlessVersion) && version >= sessionlessVersion
}

const sessionlessVersion = "2026-07-28"

// guard rejects requests whose Host or Origin is not this server's loopback
// address (DNS rebinding, cross-site pages).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		hostOK := s.hosts[lower(r.Host)]
		origin, hasOrigin := r.Header["Origin"]
		originOK := !hasOrigin || (len(origin) == 1 && s.origins[lower(origin[0])])
		s.mu.Unlock()
		if !hostOK {
			http.Error(w, "Forbidden: this console answers only at its own loopback address (Host header "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return
		}
		if !originOK {
			http.Error(w, "Forbidden: requests from web pages are refused (Origin header)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Close stops serving, in the order that lets every call in flight end
// with a result (design.md §5): new calls are refused; a Surface that can
// (agent.Dispatcher) withdraws its running calls with a shutdown reason and
// they write their results and audit records; the server waits for those
// answers to reach the wire (agent.ShutdownGrace in all); then every
// conversation ends (tabs handed to the operator), every MCP session
// closes, the HTTP server shuts down gracefully (with a deadline, then
// closes what is left) and the endpoint file is removed. Idempotent; a
// concurrent call returns when the first one has finished.
func (s *Server) Close() { s.closeOnce.Do(s.close) }

func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	srv, serveErr, stop, endpoint, url := s.http, s.serveErr, s.stopCtx, s.endpoint, s.url
	busy := s.posts > 0
	if s.storeStop != nil {
		close(s.storeStop)
		s.storeStop = nil
	}
	if s.idleStop != nil {
		close(s.idleStop)
		s.idleStop = nil
	}
	s.mu.Unlock()
	if stop != nil {
		stop()
	}

	grace, cancel := context.WithTimeout(context.Background(), agent.ShutdownGrace)
	defer cancel()
	if sd, ok := s.cfg.Surface.(shutdowner); ok {
		if err := sd.Shutdown(grace); err != nil {
			s.log.Warn("calls still running at shutdown", "err", err)
		}
	}
	s.mu.Lock()
	var sessions []*mcp.ServerSession
	for _, t := range s.sessions {
		sessions = append(sessions, t.session)
	}
	for _, c := range s.convs {
		s.endConversationLocked(c, "console closing")
	}
	s.mu.Unlock()
	// The calls have their results; wait until those are written to their
	// POST streams, which closing a session would cut off.
	s.waitPosts(grace)
	if busy {
		// A stateful client reads a POST's answer and its session's event
		// stream on separate connections; if the stream's end is read
		// first, the SDKs fail the session and with it the call whose
		// answer is already on the wire. Give the answers a head start.
		t := time.NewTimer(answerLinger)
		select {
		case <-t.C:
		case <-grace.Done():
		}
		t.Stop()
	}

	for _, ss := range sessions {
		ss.Close()
	}
	// Sessions that never initialized are not tracked; close them too so
	// their hanging streams end before the listener shuts down.
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		cancel()
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("mcp server stopped", "err", err)
		}
	}
	s.watchers.Wait()
	if endpoint {
		if err := RemoveEndpoint(url); err != nil {
			s.log.Warn("remove endpoint file", "err", err)
		}
	}
}

func (s *Server) postStarted() {
	s.mu.Lock()
	s.posts++
	s.mu.Unlock()
}

func (s *Server) postDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts--
	if s.posts == 0 && s.postsIdle != nil {
		close(s.postsIdle)
		s.postsIdle = nil
	}
}

// waitPosts waits until no request but event streams is being served, or
// ctx is done.
func (s *Server) waitPosts(ctx context.Context) {
	s.mu.Lock()
	if s.posts == 0 {
		s.mu.Unlock()
		return
	}
	if s.postsIdle == nil {
		s.postsIdle = make(chan struct{})
	}
	idle := s.postsIdle
	s.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		s.log.Warn("answers still being written at shutdown", "err", ctx.Err())
	}
}

// record writes an audit record; see the package doc for why a failure is
// reported rather than returned.
func (s *Server) record(rec audit.Record) {
	if s.cfg.Audit == nil {
		return
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	if err := s.cfg.Audit.Write(rec); err != nil {
		s.log.Error("audit write failed", "kind", rec.Kind, "err", err)
		s.cfg.Engine.Note(consent.ConversationID(rec.Conversation), "audit log write failed: "+err.Error(), true)
	}
}

// EndpointPath is the endpoint file Start published, "" when it published
// none. A name other than EndpointFile means another console keeps the
// default one: hosts reach this console by naming the file.
func (s *Server) EndpointPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpointPath
}
