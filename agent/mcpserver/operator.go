package mcpserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// OperatorPath is where `tabwarden connect` mints a named agent token:
// POST {"name": "codex"} with the operator secret from the endpoint file as
// bearer → {"name", "token", "url"}. Agent tokens are refused there: an
// agent can never mint itself another identity through MCP's own door.
const OperatorPath = "/operator/tokens"

// mintRequest and mintReply are OperatorPath's wire shapes.
type mintRequest struct {
	Name string `json:"name"`
}

type mintReply struct {
	Name  string `json:"name"`
	Token string `json:"token"`
	URL   string `json:"url"`
}

func newOperatorSecret() string {
	return "two_" + base64.RawURLEncoding.EncodeToString(randomBytes(32))
}

// serveOperator handles OperatorPath. A name already taken gets the next
// free one with a numeric suffix (codex, codex-2, …), so running connect
// twice for one host never fails.
func (s *Server) serveOperator(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.operatorSecret)) != 1 {
		http.Error(w, "Unauthorized: the operator secret from the endpoint file is required", http.StatusUnauthorized)
		return
	}
	var req mintRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	tok, err := s.MintFree(req.Name)
	if errors.Is(err, ErrTokenName) {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.minted(tok.Name, "by `tabwarden connect`", "")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(mintReply{Name: tok.Name, Token: tok.Secret, URL: s.URL()})
}

// MintFree mints name, or name-2, name-3, … when it is taken.
func (s *Server) MintFree(name string) (Token, error) {
	for n := 1; ; n++ {
		try := name
		if n > 1 {
			try = name + "-" + strconv.Itoa(n)
		}
		tok, err := s.MintToken(try)
		if !errors.Is(err, ErrTokenExists) {
			return tok, err
		}
	}
}

// MintedRemotely is a token minted through OperatorPath.
type MintedRemotely struct {
	Name, Token, URL string
}

// RequestToken asks the console named by ep to mint an agent token called
// name (or name-2, … when taken), with ep's operator secret.
func RequestToken(ctx context.Context, ep Endpoint, name string) (MintedRemotely, error) {
	if ep.Operator == "" {
		return MintedRemotely{}, errors.New("the endpoint file has no operator secret (written by an older console?); restart the console, or mint a token with n in its screen")
	}
	u, err := url.Parse(ep.URL)
	if err != nil {
		return MintedRemotely{}, fmt.Errorf("endpoint URL %q: %w", ep.URL, err)
	}
	u.Path = OperatorPath
	body, _ := json.Marshal(mintRequest{Name: name})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return MintedRemotely{}, err
	}
	req.Header.Set("Authorization", "Bearer "+ep.Operator)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return MintedRemotely{}, fmt.Errorf("no tabwarden console answers at %s: %w", ep.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return MintedRemotely{}, fmt.Errorf("the console refused to mint a token (%s): %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	var rep mintReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&rep); err != nil {
		return MintedRemotely{}, fmt.Errorf("the console's answer: %w", err)
	}
	return MintedRemotely(rep), nil
}
