package agent

import (
	"bytes"
	"encoding/json"
	"slices"
)

// HostAddedArgs are the arguments an agent host adds to every tool's schema
// on its own and tells its model to send (Gemini CLI's wait_for_previous asks
// the host to run the call after the previous ones). They mean nothing to
// the console: every tool drops them before its strict decode, while any
// other unknown argument stays invalid_action (DESIGN §5).
var HostAddedArgs = []string{"wait_for_previous"}

// withoutHostAddedArgs returns args with the top-level HostAddedArgs
// removed. Anything that is not a JSON object comes back as it was, for the
// strict decode to refuse with its own message.
func withoutHostAddedArgs(args json.RawMessage) json.RawMessage {
	// An upload's arguments run to megabytes: parse twice only when a
	// name could be there at all.
	if !slices.ContainsFunc(HostAddedArgs, func(name string) bool { return bytes.Contains(args, []byte(name)) }) {
		return args
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(args, &fields) != nil {
		return args
	}
	dropped := false
	for _, name := range HostAddedArgs {
		if _, ok := fields[name]; ok {
			delete(fields, name)
			dropped = true
		}
	}
	if !dropped {
		return args
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return args
	}
	return out
}

// Tool argument shapes of design.md §5. The MCP input schemas are inferred from
// these structs (jsonschema tags carry the descriptions the model reads), so
// the dispatch and the wire schema cannot drift apart.

type TabsArgs struct{}

type OpenArgs struct {
	URL        string `json:"url" jsonschema:"absolute http(s) URL to open; the operator approves each new origin"`
	TabID      string `json:"tabId,omitempty" jsonschema:"reuse this owned tab instead of opening a new one"`
	Background bool   `json:"background,omitempty" jsonschema:"open without bringing the tab to front; its reviews wait until the operator selects it"`
}

type NavigateArgs struct {
	TabID  string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	URL    string `json:"url,omitempty" jsonschema:"absolute http(s) URL; give url or action, not both"`
	Action string `json:"action,omitempty" jsonschema:"back, forward or reload"`
}

type ObserveArgs struct {
	TabID        string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	IncludeImage bool   `json:"includeImage,omitempty" jsonschema:"also return a viewport PNG (needed for click by x,y)"`
	Cursor       string `json:"cursor,omitempty" jsonschema:"page through elements and text left out of a previous observation"`
	Since        string `json:"since,omitempty" jsonschema:"observationId: return only elements added, removed or changed since it"`
	TextChars    int    `json:"textChars,omitempty" jsonschema:"page text characters to return (default 4000, at most 16000)"`
}

// ActAction is one page action. Which fields apply depends on type.
type ActAction struct {
	Type   string   `json:"type" jsonschema:"click, fill, select, key or scroll"`
	Ref    string   `json:"ref,omitempty" jsonschema:"element ref from the observation, e.g. e12"`
	X      *float64 `json:"x,omitempty" jsonschema:"CSS pixel x (click by coordinates needs an image observation; scroll position)"`
	Y      *float64 `json:"y,omitempty" jsonschema:"CSS pixel y"`
	Text   string   `json:"text,omitempty" jsonschema:"fill: text that replaces the field's content (at most 8000 chars)"`
	Value  string   `json:"value,omitempty" jsonschema:"select: option value"`
	Label  string   `json:"label,omitempty" jsonschema:"select: option label"`
	Key    string   `json:"key,omitempty" jsonschema:"key: Enter, Tab, Escape, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Backspace, Space, PageUp, PageDown, Home or End"`
	DeltaY *int     `json:"deltaY,omitempty" jsonschema:"scroll: pixels, -1200 to 1200"`
}

type ActArgs struct {
	TabID         string    `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	ObservationID string    `json:"observationId" jsonschema:"the observation this action is based on; each observation is used up by one action"`
	Action        ActAction `json:"action"`
}

type VerifyArgs struct {
	TabID     string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	Assertion string `json:"assertion" jsonschema:"text_contains, text_absent, url_is, title_contains or element_visible"`
	Value     string `json:"value" jsonschema:"text, URL or title to check; for element_visible: role and name as 'button \"Save\"'"`
}

type HandoffArgs struct {
	TabID  string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	Reason string `json:"reason,omitempty" jsonschema:"what the person should do, e.g. sign in or solve a CAPTCHA"`
}

type CloseArgs struct {
	TabID string `json:"tabId" jsonschema:"the owned tab to close"`
}

type ListToolsArgs struct {
	TabID string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
}

type CallToolArgs struct {
	TabID  string          `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	ToolID string          `json:"toolId" jsonschema:"toolId from webmcp_list_tools"`
	Input  json.RawMessage `json:"input,omitempty" jsonschema:"input object matching the tool's inputSchema"`
}

type UploadArgs struct {
	TabID         string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	ObservationID string `json:"observationId" jsonschema:"the observation the file input's ref comes from; used up by this upload"`
	Ref           string `json:"ref" jsonschema:"ref of the file input (listed as sensitive in the observation)"`
	Filename      string `json:"filename" jsonschema:"the file name the page sees, without any directory"`
	ContentBase64 string `json:"contentBase64" jsonschema:"the file's bytes, standard padded base64"`
}

// BatchVerify is a verify step of a batch.
type BatchVerify struct {
	Assertion string `json:"assertion" jsonschema:"text_contains, text_absent, url_is, title_contains or element_visible"`
	Value     string `json:"value" jsonschema:"text, URL or title to check; for element_visible: role and name as 'button \"Save\"'"`
}

// BatchStep is one step of a batch: an act or a verify.
type BatchStep struct {
	Action *ActAction   `json:"action,omitempty" jsonschema:"an act (click, fill and select by ref; key; scroll); targets are refs from your latest observation"`
	Verify *BatchVerify `json:"verify,omitempty" jsonschema:"a check, as browser_verify"`
}

type BatchArgs struct {
	TabID       string      `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	Steps       []BatchStep `json:"steps" jsonschema:"1 to 20 steps, run in order"`
	StopOnError *bool       `json:"stopOnError,omitempty" jsonschema:"stop at the first failed step (default true); a changed target, a cancel or an uncertain outcome always stops"`
}

type JobArgs struct {
	JobID  string `json:"jobId" jsonschema:"jobId from browser_batch"`
	Cancel bool   `json:"cancel,omitempty" jsonschema:"stop the job before its next step (a step already sent is not undone)"`
}
