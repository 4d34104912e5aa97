package mcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/consent"
)

// Caller liveness (design.md §4: a review whose caller is gone is withdrawn
// at once). A tool call runs under a context that ends, with the reason as
// its cause, as soon as anyone who could still receive its result is gone:
//
//   - MCP cancellation (notifications/cancelled) or, in the sessionless
//     protocol, the POST ending: the SDK cancels the handler's context;
//   - the stateful POST that carried the call (and whose SSE response would
//     carry its result) closing: see carriers below;
//   - the conversation ending: session DELETE (endDeleted), token revoked,
//     server closing (conversation.ctx). The idle timeout never ends a
//     session with a call in flight, so it withdraws nothing.
//
// The consent engine withdraws a pending review when the context of its Ask
// (or of the op the review belongs to) ends, and audits it canceled with
// the cause.

// DefaultProgressInterval is how often a call in flight tells a client that
// sent a progressToken that it is still waiting (design.md §5: every 5 s).
const DefaultProgressInterval = 5 * time.Second

// carrierHeader names, on a stateful POST, the carrier entry the server
// registered for it. The SDK hands the POST's header map to the tool
// handler (RequestExtra.Header) but runs the handler under the session's
// context, which the POST's connection closing does not cancel (the SDK's
// stateful transport keeps handlers running for a client that could resume
// the stream; this server keeps no event store, so nothing can). The
// server strips any client-sent value before setting its own.
const carrierHeader = "Tabwarden-Carrier"

// carriers maps the carrier id of each stateful POST being served to that
// request's context, which net/http cancels when the client's connection
// closes.
type carriers struct {
	mu sync.Mutex
	m  map[string]context.Context
}

// errCarrierGone is the cause of a call whose stateful POST closed.
var errCarrierGone = errors.New("the caller is gone: the HTTP connection that carried the call closed")

// carry serves a stateful request with a carrier entry for its lifetime.
// Every request loses a client-sent carrier header first.
func (s *Server) carry(r *http.Request, serve func(*http.Request)) {
	r.Header.Del(carrierHeader)
	if r.Method != http.MethodPost {
		serve(r)
		return
	}
	id := rand.Text()
	s.carriers.mu.Lock()
	if s.carriers.m == nil {
		s.carriers.m = make(map[string]context.Context)
	}
	s.carriers.m[id] = r.Context()
	s.carriers.mu.Unlock()
	defer func() {
		s.carriers.mu.Lock()
		delete(s.carriers.m, id)
		s.carriers.mu.Unlock()
	}()
	r.Header.Set(carrierHeader, id)
	serve(r)
}

// carrierOf returns the context of the POST that carried a stateful call.
// ok is false for a call that names no carrier (the sessionless protocol,
// whose handler context the SDK already ties to its POST). A call whose
// carrier is already gone gets a done context.
func (s *Server) carrierOf(req *mcp.CallToolRequest) (ctx context.Context, ok bool) {
	if req.Extra == nil || req.Extra.Header == nil {
		return nil, false
	}
	id := req.Extra.Header.Get(carrierHeader)
	if id == "" {
		return nil, false
	}
	s.carriers.mu.Lock()
	ctx = s.carriers.m[id]
	s.carriers.mu.Unlock()
	if ctx == nil {
		// The POST finished before its handler ran: nobody reads the result.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		return done, true
	}
	return ctx, true
}

// endDeleted ends the conversation of a session its own client DELETEs
// before the SDK sees the request: the SDK closes the session only once its
// in-flight calls have returned, and a call waiting on a review would hold
// the DELETE (and its review) until the review timed out.
func (s *Server) endDeleted(r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	t := s.sessions[id]
	own := t != nil && t.deleted
	s.mu.Unlock()
	if own {
		s.sessionEnded(id)
	}
}

// attend returns the context a tool call runs under (see above) and a
// function that ends it once the call has returned. While the call is in
// flight and the client sent a progressToken, a progress notification goes
// out every progress interval.
func (s *Server) attend(ctx context.Context, req *mcp.CallToolRequest, c *conversation) (context.Context, func()) {
	// WithoutCancel keeps the SDK's values (the request id that routes
	// progress to the call's own stream); cancellation is wired below, each
	// with its cause.
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	handlerGone := errors.New("the caller is gone: the MCP request was canceled (notifications/cancelled, or its session closed)")
	if req.Session == nil || req.Session.ID() == "" {
		handlerGone = errors.New("the caller is gone: its HTTP request ended (connection closed or call canceled)")
	}
	stops := []func() bool{
		context.AfterFunc(ctx, func() { cancel(handlerGone) }),
		context.AfterFunc(c.ctx, func() { cancel(context.Cause(c.ctx)) }),
	}
	if carrier, ok := s.carrierOf(req); ok {
		stops = append(stops, context.AfterFunc(carrier, func() { cancel(errCarrierGone) }))
	}
	var progress sync.WaitGroup
	stopProgress := make(chan struct{})
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		progress.Go(func() { s.sendProgress(callCtx, req.Session, token, c.id, stopProgress) })
	}
	return callCtx, func() {
		close(stopProgress)
		progress.Wait()
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// pendingReviews is the part of *consent.Engine that lets progress say what
// a call waits for; an Engine without it gets the generic message.
type pendingReviews interface {
	Snapshot() consent.State
}

// sendProgress notifies every progress interval until stop closes or the
// call's context ends. Progress counts the notifications (the total is
// unknown: a review waits as long as the operator takes).
func (s *Server) sendProgress(ctx context.Context, ss *mcp.ServerSession, token any, conv consent.ConversationID, stop <-chan struct{}) {
	tick := time.NewTicker(s.progressEvery)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		msg := "in progress"
		if s.waitsOnReview(conv) {
			msg = "waiting for the operator's review"
		}
		// A failed write means the stream is gone; the call's context
		// ends through its own channels.
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
	}
}

func (s *Server) waitsOnReview(conv consent.ConversationID) bool {
	pr, ok := s.cfg.Engine.(pendingReviews)
	if !ok {
		return false
	}
	for _, r := range pr.Snapshot().Queue {
		if r.Conversation == conv {
			return true
		}
	}
	return false
}
