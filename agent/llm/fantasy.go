package llm

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/anthropic"
	"charm.land/fantasy/providers/openai"
	"charm.land/fantasy/providers/openaicompat"
)

// Providers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Defaults of Config.
const (
	DefaultTimeout    = 3 * time.Minute
	DefaultMaxRetries = 4
	DefaultBackoff    = time.Second
)

// Config is one provider setup.
type Config struct {
	// Provider is ProviderOpenAI (any OpenAI-compatible chat-completions
	// endpoint) or ProviderAnthropic.
	Provider string
	// BaseURL overrides the provider's endpoint (for openai, the URL the
	// /chat/completions path is appended to, e.g. http://127.0.0.1:8080/v1).
	BaseURL string
	// Model is the model id. Required.
	Model string
	// APIKey is the provider key; the caller reads it from the environment.
	APIKey string
	// Stream asks for streamed (SSE) answers. Off: one JSON answer.
	Stream bool
	// Images is "on", "off" or "" (the capability table decides).
	Images string
	// Timeout bounds one attempt of one request. Zero: DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how often a retryable failure is retried. Zero:
	// DefaultMaxRetries; negative: never.
	MaxRetries int
	// Backoff is the first retry's delay, doubled each time (with jitter).
	// Zero: DefaultBackoff.
	Backoff time.Duration
	// HTTPClient carries the requests. Nil: a client of the library's.
	HTTPClient *http.Client
}

// New builds the Model of cfg.
func New(ctx context.Context, cfg Config) (Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("llm: no model: pass --model (or name a setup in the providers file)")
	}
	var (
		p   fantasy.Provider
		err error
	)
	switch cfg.Provider {
	case ProviderOpenAI:
		if cfg.BaseURL == "" {
			opts := []openai.Option{openai.WithAPIKey(cfg.APIKey)}
			if cfg.HTTPClient != nil {
				opts = append(opts, openai.WithHTTPClient(cfg.HTTPClient))
			}
			p, err = openai.New(opts...)
		} else {
			// Any other chat-completions server: llama.cpp, vLLM, Ollama…
			opts := []openaicompat.Option{openaicompat.WithBaseURL(cfg.BaseURL), openaicompat.WithAPIKey(cfg.APIKey)}
			if cfg.HTTPClient != nil {
				opts = append(opts, openaicompat.WithHTTPClient(cfg.HTTPClient))
			}
			p, err = openaicompat.New(opts...)
		}
	case ProviderAnthropic:
		opts := []anthropic.Option{anthropic.WithAPIKey(cfg.APIKey)}
		if cfg.BaseURL != "" {
			opts = append(opts, anthropic.WithBaseURL(cfg.BaseURL))
		}
		if cfg.HTTPClient != nil {
			opts = append(opts, anthropic.WithHTTPClient(cfg.HTTPClient))
		}
		p, err = anthropic.New(opts...)
	default:
		return nil, fmt.Errorf("llm: unknown provider %q: use openai or anthropic", cfg.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %w", cfg.Provider, err)
	}
	lm, err := p.LanguageModel(ctx, cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("llm: %s model %s: %w", cfg.Provider, cfg.Model, err)
	}
	vision := VisionModel(cfg.Model)
	switch cfg.Images {
	case "on":
		vision = true
	case "off":
		vision = false
	case "":
	default:
		return nil, fmt.Errorf("llm: images %q: use on or off", cfg.Images)
	}
	m := &fantasyModel{cfg: cfg, lm: lm, vision: vision}
	m.cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	m.cfg.Backoff = cmp.Or(cfg.Backoff, DefaultBackoff)
	if cfg.MaxRetries == 0 {
		m.cfg.MaxRetries = DefaultMaxRetries
	}
	return m, nil
}

type fantasyModel struct {
	cfg    Config
	lm     fantasy.LanguageModel
	vision bool
}

func (m *fantasyModel) Name() string { return m.cfg.Provider + "/" + m.cfg.Model }
func (m *fantasyModel) Vision() bool { return m.vision }
func (m *fantasyModel) Price() (float64, float64, bool) {
	p, ok := PriceOf(m.cfg.Model)
	return p.In, p.Out, ok
}

// Error is a provider failure as the operator reads it. It never carries
// the request (which may hold a screenshot) or the raw response.
type Error struct {
	// Status is the HTTP status, 0 when the request did not get one.
	Status int
	// Retryable: a later identical request may succeed.
	Retryable bool
	Msg       string
}

func (e *Error) Error() string { return e.Msg }

// Turn implements Model.
func (m *fantasyModel) Turn(ctx context.Context, req Request, onText func(string)) (Turn, error) {
	call := m.call(req)
	delay := m.cfg.Backoff
	for attempt := 0; ; attempt++ {
		t, err := m.attempt(ctx, call, onText)
		if err == nil {
			return t, nil
		}
		e := m.classify(err)
		if ctx.Err() != nil {
			return Turn{}, ctx.Err()
		}
		if !e.Retryable || m.cfg.MaxRetries < 0 || attempt >= m.cfg.MaxRetries {
			return Turn{}, e
		}
		// Full jitter around an exponential delay, so a fleet of consoles
		// does not retry in step.
		wait := delay/2 + rand.N(delay/2+1)
		select {
		case <-ctx.Done():
			return Turn{}, ctx.Err()
		case <-time.After(wait):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

func (m *fantasyModel) attempt(ctx context.Context, call fantasy.Call, onText func(string)) (Turn, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	if !m.cfg.Stream {
		resp, err := m.lm.Generate(ctx, call)
		if err != nil {
			return Turn{}, err
		}
		t := Turn{Text: resp.Content.Text(), Finish: string(resp.FinishReason), Usage: Usage{Input: resp.Usage.InputTokens, Output: resp.Usage.OutputTokens}}
		for _, tc := range resp.Content.ToolCalls() {
			t.ToolCalls = append(t.ToolCalls, ToolCall{ID: tc.ToolCallID, Name: tc.ToolName, Input: rawInput(tc.Input)})
		}
		if onText != nil && t.Text != "" {
			onText(t.Text)
		}
		return t, nil
	}
	stream, err := m.lm.Stream(ctx, call)
	if err != nil {
		return Turn{}, err
	}
	var (
		t    Turn
		text strings.Builder
		done bool
	)
	for part := range stream {
		switch part.Type {
		case fantasy.StreamPartTypeTextDelta:
			text.WriteString(part.Delta)
			if onText != nil {
				onText(part.Delta)
			}
		case fantasy.StreamPartTypeToolCall:
			t.ToolCalls = append(t.ToolCalls, ToolCall{ID: part.ID, Name: part.ToolCallName, Input: rawInput(part.ToolCallInput)})
		case fantasy.StreamPartTypeFinish:
			t.Finish = string(part.FinishReason)
			t.Usage = Usage{Input: part.Usage.InputTokens, Output: part.Usage.OutputTokens}
			done = true
		case fantasy.StreamPartTypeError:
			return Turn{}, part.Error
		}
	}
	if err := ctx.Err(); err != nil {
		return Turn{}, err
	}
	if !done {
		return Turn{}, fantasy.NewIncompleteStreamError()
	}
	t.Text = text.String()
	return t, nil
}

// rawInput is a tool call's arguments as JSON; an empty or broken string
// becomes an object the tool will refuse with its own envelope.
func rawInput(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if !json.Valid([]byte(s)) {
		b, _ := json.Marshal(map[string]string{"_unparsable_arguments": s})
		return b
	}
	return json.RawMessage(s)
}

// classify turns a library error into an Error with an operator's message.
func (m *fantasyModel) classify(err error) *Error {
	var pe *fantasy.ProviderError
	if errors.As(err, &pe) {
		e := &Error{Status: pe.StatusCode, Retryable: pe.IsRetryable()}
		detail := oneLine(pe.Message, 200)
		switch pe.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			e.Msg = fmt.Sprintf("%s refused the API key (HTTP %d): check %s", m.cfg.Provider, pe.StatusCode, KeyEnv(m.cfg.Provider))
		case http.StatusNotFound:
			e.Msg = fmt.Sprintf("%s has no model %q at %s (HTTP 404): check --model and --base-url", m.cfg.Provider, m.cfg.Model, cmp.Or(m.cfg.BaseURL, "its default endpoint"))
		case 0:
			e.Msg = fmt.Sprintf("%s request failed: %s", m.cfg.Provider, detail)
		default:
			e.Msg = fmt.Sprintf("%s request failed (HTTP %d): %s", m.cfg.Provider, pe.StatusCode, detail)
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Retryable: true, Msg: fmt.Sprintf("%s did not answer within %s", m.cfg.Provider, m.cfg.Timeout)}
	}
	if fantasy.IsTransportError(err) {
		return &Error{Retryable: true, Msg: fmt.Sprintf("%s unreachable: %s", m.cfg.Provider, oneLine(err.Error(), 200))}
	}
	return &Error{Msg: fmt.Sprintf("%s request failed: %s", m.cfg.Provider, oneLine(err.Error(), 200))}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// KeyEnv names the environment variable that holds a provider's key.
func KeyEnv(provider string) string {
	if provider == ProviderAnthropic {
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// call converts req into the library's call.
func (m *fantasyModel) call(req Request) fantasy.Call {
	var prompt fantasy.Prompt
	if req.System != "" {
		prompt = append(prompt, fantasy.NewSystemMessage(req.System))
	}
	for i := 0; i < len(req.Messages); i++ {
		msg := req.Messages[i]
		switch msg.Role {
		case RoleUser:
			prompt = append(prompt, fantasy.NewUserMessage(msg.Text))
		case RoleAssistant:
			fm := fantasy.Message{Role: fantasy.MessageRoleAssistant}
			if msg.Text != "" {
				fm.Content = append(fm.Content, fantasy.TextPart{Text: msg.Text})
			}
			for _, tc := range msg.ToolCalls {
				fm.Content = append(fm.Content, fantasy.ToolCallPart{ToolCallID: tc.ID, ToolName: tc.Name, Input: string(tc.Input)})
			}
			prompt = append(prompt, fm)
		case RoleTool:
			// Consecutive results answer one assistant turn: one tool
			// message, as Anthropic wants them in one user turn.
			fm := fantasy.Message{Role: fantasy.MessageRoleTool}
			for ; i < len(req.Messages) && req.Messages[i].Role == RoleTool; i++ {
				fm.Content = append(fm.Content, resultPart(req.Messages[i].Result))
			}
			i--
			prompt = append(prompt, fm)
		}
	}
	call := fantasy.Call{Prompt: prompt}
	if req.MaxOutputTokens > 0 {
		call.MaxOutputTokens = &req.MaxOutputTokens
	}
	for _, t := range req.Tools {
		call.Tools = append(call.Tools, fantasy.FunctionTool{Name: t.Name, Description: t.Description, InputSchema: t.Schema})
	}
	if len(call.Tools) > 0 {
		auto := fantasy.ToolChoiceAuto
		call.ToolChoice = &auto
	}
	return call
}

func resultPart(r *ToolResult) fantasy.ToolResultPart {
	if r == nil {
		return fantasy.ToolResultPart{Output: fantasy.ToolResultOutputContentText{Text: "{}"}}
	}
	p := fantasy.ToolResultPart{ToolCallID: r.CallID}
	switch {
	case len(r.Image) > 0:
		p.Output = fantasy.ToolResultOutputContentMedia{Data: base64.StdEncoding.EncodeToString(r.Image), MediaType: "image/png", Text: r.Text}
	case r.IsError:
		p.Output = fantasy.ToolResultOutputContentError{Error: errors.New(r.Text)}
	default:
		p.Output = fantasy.ToolResultOutputContentText{Text: r.Text}
	}
	return p
}
