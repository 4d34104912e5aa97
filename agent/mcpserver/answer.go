package mcpserver

import (
	"encoding/hex"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
)

// Answer tracking: whether a tool call's result left this server for its
// client. The SDK writes a call's JSON-RPC response, after the tool handler
// returns, as one SSE event on the POST that carried the call (Write, then
// a best-effort Flush whose error it drops), and drops the response without
// a write when that POST has already ended. No event store is configured,
// so a response that was not written is never replayed either.
//
// So the server wraps each POST's ResponseWriter: once the handler has
// returned, the next Write and Flush carry the answer, and the answer left
// only if both succeeded while the request was still open. When the POST
// ends otherwise (client cancel, closed connection or stream, ended
// session), the Surface hears AnswerLost. That is the part the server can
// see; bytes that left it can still die on the way, which the agent
// package covers on its own (an answer counts as received only once the
// agent uses it, tool_batch.go).

// answerHeader carries a POST's watch id from route to the tool handler,
// which sees the request's headers (RequestExtra.Header) but not its
// ResponseWriter. route replaces any value the client sent.
const answerHeader = "Tabwarden-Answer-Watch"

// AnswerLoser is implemented by a Surface that must hear about a result
// that may not have reached its client; *agent.Dispatcher does.
type AnswerLoser interface {
	AnswerLost(conv consent.ConversationID, res agent.Result)
}

type answerTable struct {
	mu sync.Mutex
	m  map[string]*answerWatch
}

// answerWatch wraps one POST's ResponseWriter.
type answerWatch struct {
	http.ResponseWriter
	req *http.Request

	mu       sync.Mutex
	armed    bool // the tool handler returned: the next write is its answer
	wrote    bool // the answer's bytes were written
	answered bool // ... and flushed while the request was open
	failed   bool // a write or flush failed
	ended    bool // the POST's handler returned
	lost     []func()
	onEnd    []func()
}

// watch wraps a POST so its tool call's answer can be followed; done must
// run when the request's handling ends. Other methods pass through.
func (s *Server) watchAnswer(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	r.Header.Del(answerHeader)
	if r.Method != http.MethodPost {
		return w, func() {}
	}
	id := hex.EncodeToString(randomBytes(12))
	a := &answerWatch{ResponseWriter: w, req: r}
	s.answers.mu.Lock()
	if s.answers.m == nil {
		s.answers.m = map[string]*answerWatch{}
	}
	s.answers.m[id] = a
	s.answers.mu.Unlock()
	r.Header.Set(answerHeader, id)
	return a, func() {
		s.answers.mu.Lock()
		delete(s.answers.m, id)
		s.answers.mu.Unlock()
		a.end()
	}
}

// answerFor is the watch of the POST that carried req, nil if none.
func (s *Server) answerFor(req *mcp.CallToolRequest) *answerWatch {
	if req.Extra == nil || req.Extra.Header == nil {
		return nil
	}
	id := req.Extra.Header.Get(answerHeader)
	if id == "" {
		return nil
	}
	s.answers.mu.Lock()
	defer s.answers.mu.Unlock()
	return s.answers.m[id]
}

// armAnswer makes the answer res of conv's call followed: if it does not
// leave, the Surface hears AnswerLost. Without a watch (a transport this
// server does not wrap) the call's context is all there is to go by.
func (s *Server) armAnswer(req *mcp.CallToolRequest, conv consent.ConversationID, res agent.Result, callDone bool) {
	l, ok := s.cfg.Surface.(AnswerLoser)
	if !ok {
		return
	}
	lost := func() { l.AnswerLost(conv, res) }
	a := s.answerFor(req)
	if a == nil {
		if callDone {
			lost()
		}
		return
	}
	a.arm(lost)
}

func (a *answerWatch) arm(lost func()) {
	a.mu.Lock()
	if a.ended {
		a.mu.Unlock()
		lost()
		return
	}
	a.armed = true
	a.lost = append(a.lost, lost)
	a.mu.Unlock()
}

func (a *answerWatch) end() {
	a.mu.Lock()
	a.ended = true
	var lost []func()
	if !a.answered {
		lost, a.lost = a.lost, nil
	}
	onEnd := a.onEnd
	a.onEnd = nil
	a.mu.Unlock()
	for _, f := range lost {
		f()
	}
	for _, f := range onEnd {
		f()
	}
}

// whenEnded runs f once the POST's handling has ended (at once if it has).
func (a *answerWatch) whenEnded(f func()) {
	a.mu.Lock()
	if a.ended {
		a.mu.Unlock()
		f()
		return
	}
	a.onEnd = append(a.onEnd, f)
	a.mu.Unlock()
}

func (a *answerWatch) Write(b []byte) (int, error) {
	n, err := a.ResponseWriter.Write(b)
	a.mu.Lock()
	if err != nil || n < len(b) {
		a.failed = true
	} else if a.armed {
		a.wrote = true
	}
	a.mu.Unlock()
	return n, err
}

// FlushError is what http.ResponseController (the SDK's flush) calls.
func (a *answerWatch) FlushError() error {
	err := http.NewResponseController(a.ResponseWriter).Flush()
	a.mu.Lock()
	switch {
	case err != nil:
		a.failed = true
	case a.wrote && !a.failed && a.req.Context().Err() == nil:
		a.answered = true
	}
	a.mu.Unlock()
	return err
}

func (a *answerWatch) Flush() { _ = a.FlushError() }

func (a *answerWatch) Unwrap() http.ResponseWriter { return a.ResponseWriter }
