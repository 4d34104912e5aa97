package webmcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Call bounds of design.md §7.
const (
	MaxInputBytes  = 128 << 10
	MaxResultBytes = 256 << 10
)

// ValidateInput checks an agent's input against the tool's accepted schema
// and returns it in canonical compact form. It runs before any review, so
// an invalid call never reaches the operator or the page. The error never
// quotes input values (they may be secrets the agent was given); it names
// the failing schema location only.
func ValidateInput(t *Tool, input json.RawMessage) (json.RawMessage, error) {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		input = json.RawMessage("{}")
	}
	if len(input) > MaxInputBytes {
		return nil, errcode.Errorf(errcode.InvalidInput, errcode.NextNone,
			"input is %d bytes, limit %d", len(input), MaxInputBytes)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(input))
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, errcode.Errorf(errcode.InvalidInput, errcode.NextNone, "input is not one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errcode.Errorf(errcode.InvalidInput, errcode.NextNone, "input must be a JSON object")
	}
	if t.resolved == nil {
		return nil, errcode.Errorf(errcode.InvalidInput, errcode.NextNone, "tool has no accepted schema")
	}
	if err := t.resolved.Validate(v); err != nil {
		return nil, errcode.Errorf(errcode.InvalidInput, errcode.NextNone,
			"input does not match the tool's inputSchema: %s", redactValidation(err))
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, errcode.Errorf(errcode.InvalidInput, errcode.NextNone, "input cannot be re-serialized")
	}
	return out, nil
}

// redactValidation keeps only the locations of jsonschema-go's message
// ("validating /properties/x") and drops the rest, which quotes instance
// values: the error text may reach a log, and input values never may.
func redactValidation(err error) string {
	var where []string
	for _, part := range strings.Split(err.Error(), ": ") {
		if strings.HasPrefix(part, "validating ") {
			where = append(where, truncate(cleanText(part), 120))
		}
	}
	if len(where) == 0 {
		return "validation failed"
	}
	return strings.Join(where, ": ")
}

// CheckResult enforces the result bounds: at most MaxResultBytes and one
// JSON value. It returns the compact form that is shown in the disclosure
// review and, if shared, delivered.
func CheckResult(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) > MaxResultBytes {
		return nil, &errcode.Error{Code: errcode.ResultTooLarge, Dispatched: true, MayHaveChangedState: true,
			Message: fmt.Sprintf("result is %d bytes, limit %d", len(raw), MaxResultBytes)}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !json.Valid(raw) {
		return nil, &errcode.Error{Code: errcode.InvalidResult, Dispatched: true, MayHaveChangedState: true,
			Message: "result is not JSON"}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, &errcode.Error{Code: errcode.InvalidResult, Dispatched: true, MayHaveChangedState: true,
			Message: "result is not JSON"}
	}
	if b.Len() > MaxResultBytes {
		return nil, &errcode.Error{Code: errcode.ResultTooLarge, Dispatched: true, MayHaveChangedState: true,
			Message: fmt.Sprintf("result is %d bytes, limit %d", b.Len(), MaxResultBytes)}
	}
	return b.Bytes(), nil
}
