package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// convKey is a conversation's transport identity (design.md §3): the token,
// plus the MCP session id when the client negotiated a stateful protocol,
// or, in the sessionless protocol, the instance id the client's process
// sends (InstanceHeader), so two host processes with one configuration are
// two conversations.
type convKey struct{ tokenID, sessionID, instance string }

// InstanceHeader carries, on sessionless requests, an id of the client
// process that sent them: the stdio relay (`tabwarden mcp-stdio`) sends a
// random one per relay process. Requests without it share the token's one
// instance-less conversation. It is an identity, not a secret: it only
// tells apart the conversations of one token's holder.
const InstanceHeader = "Tabwarden-Instance"

// instanceOf reads a sessionless request's instance id; anything but 1-64
// letters, digits, '-' and '_' reads as none.
func instanceOf(extra *mcp.RequestExtra) string {
	if extra == nil || extra.Header == nil {
		return ""
	}
	v := extra.Header.Get(InstanceHeader)
	if len(v) == 0 || len(v) > 64 {
		return ""
	}
	for _, r := range v {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return ""
		}
	}
	return v
}

type conversation struct {
	key   convKey
	id    consent.ConversationID
	name  string
	token *token
	// inflight counts its calls running; lastCall is when the last one
	// ended (or the conversation began). A sessionless conversation idles
	// out from them as a session does (idleSessionless). Both under s.mu.
	inflight int
	lastCall time.Time
	// answering counts its calls' POSTs not yet ended: a call's answer is
	// written after its handler returns. answered, when set, is closed
	// once answering drops to zero (a revoke waits on it). Under s.mu.
	answering int
	answered  chan struct{}
	// idles: a sessionless HTTP conversation (not the built-in agent's
	// in-memory one, which ends with its agent).
	idles bool
	// ctx is cancelled when the conversation ends, with why as its cause;
	// every call of the conversation runs under it.
	ctx    context.Context
	cancel context.CancelCauseFunc
}

type trackedSession struct {
	session *mcp.ServerSession
	tokenID string
	// deleted: its own client sent DELETE, so an end is the client's doing
	// rather than the idle timeout's.
	deleted bool
}

// trackSession watches a stateful session so its conversation ends when the
// session does. Idempotent; sessionless (id "") sessions are not tracked.
func (s *Server) trackSession(ss *mcp.ServerSession, tokenID string) {
	if ss == nil || tokenID == "" {
		return
	}
	id := ss.ID()
	if id == "" {
		return
	}
	s.mu.Lock()
	if s.closed || s.sessions[id] != nil || s.ended[id] {
		s.mu.Unlock()
		return
	}
	s.sessions[id] = &trackedSession{session: ss, tokenID: tokenID}
	s.watchers.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.watchers.Done()
		// How the session ended does not matter here, only that it did.
		_ = ss.Wait()
		s.sessionEnded(id)
	}()
}

// noteDelete remembers that a session's own client asked to end it, so the
// audit can tell that apart from an idle timeout. Another token's DELETE
// is refused by the SDK and noted nowhere.
func (s *Server) noteDelete(r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	info := auth.TokenInfoFromContext(r.Context())
	if id == "" || info == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.sessions[id]; t != nil && t.tokenID == info.UserID {
		t.deleted = true
	}
}

func (s *Server) sessionEnded(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	why := "MCP session closed by the client"
	if t := s.sessions[id]; t == nil || !t.deleted {
		why = "MCP session ended by the server"
		if s.idle > 0 {
			why += " (no request for " + s.idle.String() + ", or the session failed)"
		}
	}
	s.ended[id] = true
	delete(s.sessions, id)
	for _, c := range s.convs {
		if c.key.sessionID == id {
			s.endConversationLocked(c, why)
		}
	}
}

// endConversationLocked ends c for good: calls under it are cancelled and
// the engine cancels its ops and hands its tabs to the operator.
func (s *Server) endConversationLocked(c *conversation, why string) {
	if s.convs[c.key] != c {
		return
	}
	delete(s.convs, c.key)
	c.cancel(errors.New("its conversation ended: " + why))
	if e, ok := s.cfg.Engine.(conversationEnder); ok {
		e.EndConversation(c.id, why) // its reviews are withdrawn with why
	} else {
		s.cfg.Engine.RemoveConversation(c.id)
	}
	s.record(audit.Record{Kind: audit.KindSession, Conversation: string(c.id), Client: c.name, Note: "ended: " + why})
}

// conversationEnder is the part of *consent.Engine that records why a
// conversation ended with the reviews it withdraws.
type conversationEnder interface {
	EndConversation(id consent.ConversationID, why string)
}

// errNoIdentity explains a call that has no live conversation.
type errNoIdentity string

func (e errNoIdentity) Error() string { return string(e) }

// conversationFor returns the conversation of a tool call, registering it
// with the engine on its first call.
func (s *Server) conversationFor(req *mcp.CallToolRequest) (*conversation, error) {
	tokenID := cmp.Or(tokenIDOf(req.Extra), inMemoryTokenID(req.Session))
	var sessionID, client, version string
	if ss := req.Session; ss != nil {
		sessionID = ss.ID()
		if p := ss.InitializeParams(); p != nil {
			version = p.ProtocolVersion
			if p.ClientInfo != nil {
				client = displayText(p.ClientInfo.Name, 48)
			}
		}
		// A client may skip notifications/initialized; its session still
		// has to end its conversation when it ends.
		s.trackSession(ss, tokenID)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens.byID[tokenID]
	switch {
	case s.closed:
		return nil, errNoIdentity("the console is shutting down")
	case t == nil:
		return nil, errNoIdentity("no live agent token: it was revoked; ask the operator for a new one")
	case sessionID != "" && s.ended[sessionID]:
		return nil, errNoIdentity("the MCP session has ended; reconnect to start a new conversation")
	}
	key := convKey{tokenID: tokenID, sessionID: sessionID}
	if sessionID == "" {
		key.instance = instanceOf(req.Extra)
	}
	if c := s.convs[key]; c != nil {
		c.inflight++
		return c, nil
	}
	raw := hex.EncodeToString(randomBytes(8))
	short := raw[:6]
	parts := []string{t.name}
	if client != "" {
		parts = append(parts, client)
	}
	parts = append(parts, short)
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &conversation{
		key:      key,
		id:       consent.ConversationID("mcp-" + raw),
		name:     strings.Join(parts, " · "),
		token:    t,
		ctx:      ctx,
		cancel:   cancel,
		inflight: 1,
		lastCall: time.Now(),
		idles:    sessionID == "" && tokenIDOf(req.Extra) != "",
	}
	s.convs[key] = c
	// Registered under s.mu so a concurrent revoke or session end cannot
	// remove the conversation before it exists in the engine.
	s.cfg.Engine.AddConversation(c.id, c.name)
	mode := "sessionless"
	if sessionID != "" {
		mode = "session"
	}
	s.cfg.Engine.Note(c.id, "MCP agent connected: "+c.name+" ("+mode+", protocol "+version+")", false)
	s.record(audit.Record{Kind: audit.KindSession, Conversation: string(c.id), Client: c.name, Note: "started: " + c.name + " (" + mode + ", protocol " + version + ")"})
	return c, nil
}

// displayText makes an agent-supplied string safe to show: control and
// format characters dropped, at most max runes.
func displayText(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if n == max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// toolHandler dispatches one tool through the Surface under the caller's
// conversation.
func (s *Server) toolHandler(tool *agent.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			args = json.RawMessage("{}")
		}
		c, err := s.conversationFor(req)
		if err != nil {
			res := tool.Answer(missingSession(err))
			s.record(audit.Record{Kind: audit.KindToolCall, Tool: tool.Name, Input: audit.Summarize(args), Code: res.Code()})
			return toolResult(res), nil
		}
		defer s.callEnded(c)
		if a := s.answerFor(req); a != nil {
			s.mu.Lock()
			c.answering++
			s.mu.Unlock()
			a.whenEnded(func() { s.answerEnded(c) })
		}
		callCtx, done := s.attend(ctx, req, c)
		res := s.cfg.Surface.Call(callCtx, c.id, tool.Name, args)
		// The answer may not reach the caller when its request already
		// ended: the handler's own context, or the stateful POST behind it.
		callDone := ctx.Err() != nil
		if carrier, ok := s.carrierOf(req); ok && carrier.Err() != nil {
			callDone = true
		}
		done()
		if res.Object == nil {
			res = tool.Answer(failure(errcode.BrowserOperationFailed, "the console produced no result", errcode.NextListTabs))
		}
		// From here on the answer is the SDK's to write (answer.go).
		s.armAnswer(req, c.id, res, callDone)
		if !s.cfg.AuditToolCalls {
			return toolResult(res), nil
		}
		s.record(audit.Record{
			Kind:         audit.KindToolCall,
			Conversation: string(c.id),
			Tab:          tabOf(args, res),
			Tool:         tool.Name,
			Input:        audit.Summarize(args),
			Code:         res.Code(),
		})
		return toolResult(res), nil
	}
}

// callEnded ends one call's count on c (conversationFor began it).
func (s *Server) callEnded(c *conversation) {
	s.mu.Lock()
	c.inflight--
	c.lastCall = time.Now()
	s.mu.Unlock()
}

// answerEnded ends one POST's count on c (toolHandler began it).
func (s *Server) answerEnded(c *conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.answering--
	if c.answering == 0 && c.answered != nil {
		close(c.answered)
		c.answered = nil
	}
}

// idleSessionless ends, every tick, the sessionless conversations with no
// call in flight and none for the idle timeout, as the SDK ends an idle
// session (design.md §3): their tabs go to the operator. A call waiting on
// a review is in flight, so it is never cut off.
func (s *Server) idleSessionless(stop <-chan struct{}, idle time.Duration) {
	t := time.NewTicker(max(idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		s.mu.Lock()
		for _, c := range s.convs {
			if c.idles && c.inflight == 0 && now.Sub(c.lastCall) >= idle {
				s.endConversationLocked(c, "sessionless conversation with no call for "+idle.String())
			}
		}
		s.mu.Unlock()
	}
}

// tabOf names the tab a call was about, from its arguments or, for a call
// that created one, its result.
func tabOf(args json.RawMessage, res agent.Result) string {
	var a struct {
		TabID string `json:"tabId"`
	}
	if json.Unmarshal(args, &a) == nil && a.TabID != "" {
		return a.TabID
	}
	if id, ok := res.Object["tabId"].(string); ok {
		return id
	}
	return ""
}

// toolResult puts a Result on the wire as design.md §5 says: compact JSON text,
// the same object as structuredContent, the image as image/png. The object
// is encoded once and the same bytes go out twice: an observation is most
// of a call's own work on the way out, and encoding a map walks it by
// reflection, sorting every level's keys.
func toolResult(res agent.Result) *mcp.CallToolResult {
	text := res.JSON()
	r := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: json.RawMessage(text),
		IsError:           res.IsError,
	}
	if len(res.Image) > 0 {
		r.Content = append(r.Content, &mcp.ImageContent{Data: res.Image, MIMEType: "image/png"})
	}
	return r
}

// missingSession is the envelope of a call with no live identity.
func missingSession(err error) agent.Result {
	msg := "this call has no conversation"
	var ni errNoIdentity
	if errors.As(err, &ni) {
		msg = string(ni)
	}
	return failure(errcode.MissingSession, msg, errcode.NextListTabs)
}

// failure builds the design.md §5 failure envelope for the server's own,
// undispatched failures (the Surface builds all others).
func failure(code errcode.Code, msg string, next errcode.Next) agent.Result {
	return agent.Result{IsError: true, Object: map[string]any{
		"ok":                  false,
		"code":                string(code),
		"error":               msg,
		"dispatched":          false,
		"mayHaveChangedState": false,
		"retrySafe":           false,
		"next":                string(next),
		"trust":               agent.TrustUntrusted,
	}}
}
