package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
)

// tokenScope is the one scope every agent token carries.
const tokenScope = "tabwarden"

// Token is a minted agent token as the operator sees it once.
type Token struct {
	Name string
	// Secret is the bearer token. It is shown once and never logged.
	Secret string
	// ConfigLine is a ready-to-paste command that adds this console to
	// Claude Code with this token.
	ConfigLine string
}

// token is the server's record of an agent token. Only the SHA-256 of the
// secret is kept.
type token struct {
	id   string // internal, unique for the server's life; the SDK's UserID
	name string
	// stored: kept in the token store (Config.TokenStore) until revoked.
	stored bool
}

type tokenTable struct {
	byName   map[string]*token
	byID     map[string]*token
	byDigest map[[sha256.Size]byte]*token
	seq      int
}

func newTokenTable() tokenTable {
	return tokenTable{
		byName:   make(map[string]*token),
		byID:     make(map[string]*token),
		byDigest: make(map[[sha256.Size]byte]*token),
	}
}

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// MintToken mints a named agent token. Names are unique among live tokens;
// a revoked token's name may be minted again (it is a new token, with new
// conversations).
func (s *Server) MintToken(name string) (Token, error) {
	if !tokenNameRE.MatchString(name) {
		return Token{}, ErrTokenName
	}
	secret := "tw_" + base64.RawURLEncoding.EncodeToString(randomBytes(32))
	digest := sha256.Sum256([]byte(secret))
	check := func() error {
		switch {
		case s.closed:
			return ErrClosed
		case s.url == "":
			return ErrNotStarted
		case s.tokens.byName[name] != nil:
			return fmt.Errorf("%w: %s", ErrTokenExists, name)
		}
		return nil
	}
	s.mu.Lock()
	err := check()
	s.mu.Unlock()
	if err != nil {
		return Token{}, err
	}
	// Every named token is kept until revoked; the default one is minted
	// anew at each start.
	store := s.cfg.TokenStore != "" && name != DefaultTokenName
	if store {
		// One writer of the store and the table at a time (syncStore too).
		s.storeMu.Lock()
		defer s.storeMu.Unlock()
		err := UpdateTokens(s.cfg.TokenStore, func(cur []StoredToken) ([]StoredToken, error) {
			if slices.ContainsFunc(cur, func(t StoredToken) bool { return t.Name == name }) {
				// Kept by another console or an earlier run.
				return nil, fmt.Errorf("%w: %s", ErrTokenExists, name)
			}
			return append(cur, StoredToken{Name: name, SHA256: hex.EncodeToString(digest[:]), Created: time.Now().UTC()}), nil
		})
		if err != nil {
			return Token{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := check(); err != nil {
		if store {
			_ = RevokeStoredToken(s.cfg.TokenStore, name)
		}
		return Token{}, err
	}
	s.addTokenLocked(name, digest, store)
	return Token{Name: name, Secret: secret, ConfigLine: ConfigLine(s.url, secret)}, nil
}

func (s *Server) addTokenLocked(name string, digest [sha256.Size]byte, stored bool) {
	s.tokens.seq++
	t := &token{id: "t" + strconv.Itoa(s.tokens.seq), name: name, stored: stored}
	s.tokens.byName[name] = t
	s.tokens.byID[t.id] = t
	s.tokens.byDigest[digest] = t
}

// Tokens lists the names of the live tokens, sorted.
func (s *Server) Tokens() []string {
	s.syncStore()
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.tokens.byName))
	for n := range s.tokens.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RevokeToken ends a token: its next request gets 401, its conversations
// end (running ops cancelled, tabs handed to the operator), its MCP sessions
// close, and the audit log records the revocation.
// A kept token leaves the token store too, so it stays revoked after a
// restart and in every other console of the user.
func (s *Server) RevokeToken(name string) error {
	s.mu.Lock()
	t := s.tokens.byName[name]
	s.mu.Unlock()
	if t == nil {
		return fmt.Errorf("%w: %s", ErrUnknownToken, name)
	}
	if t.stored {
		s.storeMu.Lock()
		defer s.storeMu.Unlock()
		if err := RevokeStoredToken(s.cfg.TokenStore, name); err != nil && !errors.Is(err, ErrUnknownToken) {
			return err
		}
	}
	return s.revokeLocal(name, "agent token "+name+" revoked", consent.LocalOperator.Name)
}

// MintAtConsole is MintFree for the `n` panel at the console's own
// terminal: the activity log says so, as it does for `tabwarden connect`.
func (s *Server) MintAtConsole(name string) (Token, error) {
	tok, err := s.MintFree(name)
	if err == nil {
		how := "with n at the console's terminal"
		if s.cfg.TokenStore == "" {
			// The demo's console keeps none: `tokens list` will not show
			// it and it ends with the console (the walk expected it kept).
			how += " (not kept: this console keeps no tokens, it ends with it)"
		}
		s.minted(tok.Name, how, consent.LocalOperator.Name)
	}
	return tok, err
}

// minted tells the activity log and the audit that a token was minted, as
// its revocation is: who can reach the console is part of the record. The
// secret goes to neither.
func (s *Server) minted(name, how, operator string) {
	s.record(audit.Record{Kind: audit.KindMint, By: "operator", Operator: operator, Note: "agent token " + name + " minted " + how})
	s.cfg.Engine.Note("", "agent token '"+name+"' minted "+how, false)
}

// revokeLocal ends a token in this server only.
func (s *Server) revokeLocal(name, note, operator string) error {
	s.mu.Lock()
	t := s.tokens.byName[name]
	if t == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownToken, name)
	}
	delete(s.tokens.byName, name)
	delete(s.tokens.byID, t.id)
	for d, tt := range s.tokens.byDigest {
		if tt == t {
			delete(s.tokens.byDigest, d)
		}
	}
	// The ended conversations' running calls answer "revoked"; their
	// sessions close only once those answers are written, or the client
	// sees a bare transport error instead of why.
	var answering []chan struct{}
	for _, c := range s.convs {
		if c.token == t {
			s.endConversationLocked(c, "agent token "+name+" revoked")
			if c.answering > 0 {
				if c.answered == nil {
					c.answered = make(chan struct{})
				}
				answering = append(answering, c.answered)
			}
		}
	}
	var sessions []*mcp.ServerSession
	for _, ts := range s.sessions {
		if ts.tokenID == t.id {
			sessions = append(sessions, ts.session)
		}
	}
	s.record(audit.Record{Kind: audit.KindRevoke, By: "operator", Operator: operator, Note: note})
	by := ""
	if operator != "" {
		by = " by " + operator
	}
	s.cfg.Engine.Note("", note+by+": its conversations ended", true)
	closed := s.closed // Close closes every session itself
	s.mu.Unlock()
	if len(answering) == 0 || closed {
		closeSessions(sessions)
		return nil
	}
	// The operator's key does not wait for the answers.
	s.watchers.Go(func() {
		grace := time.NewTimer(agent.ShutdownGrace)
		defer grace.Stop()
		for _, ch := range answering {
			select {
			case <-ch:
			case <-grace.C:
				closeSessions(sessions)
				return
			}
		}
		// As at Close: a stateful client reads the answer and the
		// session's event stream on separate connections; the stream's
		// end read first would fail the call whose answer is on the wire.
		linger := time.NewTimer(answerLinger)
		defer linger.Stop()
		select {
		case <-linger.C:
		case <-grace.C:
		}
		closeSessions(sessions)
	})
	return nil
}

func closeSessions(sessions []*mcp.ServerSession) {
	for _, ss := range sessions {
		ss.Close()
	}
}

// verifyToken is the SDK bearer middleware's verifier.
func (s *Server) verifyToken(_ context.Context, secret string, _ *http.Request) (*auth.TokenInfo, error) {
	d := sha256.Sum256([]byte(secret))
	s.mu.Lock()
	t := s.tokens.byDigest[d]
	s.mu.Unlock()
	if t == nil {
		// Minted by another console of this user since the last read?
		s.syncStore()
		s.mu.Lock()
		t = s.tokens.byDigest[d]
		s.mu.Unlock()
	}
	if t == nil {
		return nil, fmt.Errorf("%w: unknown or revoked agent token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: t.id, Scopes: []string{tokenScope}}, nil
}

// tokenIDOf returns the token id the bearer middleware attached to a request.
func tokenIDOf(extra *mcp.RequestExtra) string {
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	return extra.TokenInfo.UserID
}

// ConfigLine is the Claude Code command that adds a console endpoint with a
// token.
func ConfigLine(url, secret string) string {
	return fmt.Sprintf(`claude mcp add --transport http tabwarden %s --header "Authorization: Bearer %s"`, url, secret)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	// crypto/rand.Read never fails on supported platforms (it panics
	// rather than return short randomness).
	rand.Read(b)
	return b
}
