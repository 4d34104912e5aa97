package fakemodel

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// HostArgument is the argument Gemini CLI adds to every tool's schema and
// tells the model to use; when a declaration offers it, the fake model sends
// it, as a model following the host's instructions does.
const HostArgument = "wait_for_previous"

// gemini answers models/MODEL:streamGenerateContent (?alt=sse: each event a
// GenerateContentResponse) and models/MODEL:generateContent (one
// GenerateContentResponse), with functionCall or text parts.
func (s *Server) gemini(w http.ResponseWriter, path string, body []byte, stream bool) {
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse *struct {
					Name     string `json:"name"`
					Response any    `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name                 string         `json:"name"`
				Parameters           map[string]any `json:"parameters"`
				ParametersJSONSchema map[string]any `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseSchema     map[string]any `json:"responseSchema"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad JSON","status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
		return
	}
	var offered []string
	hostArg := map[string]bool{}
	for _, t := range req.Tools {
		for _, d := range t.FunctionDeclarations {
			offered = append(offered, d.Name)
			for _, schema := range []map[string]any{d.Parameters, d.ParametersJSONSchema} {
				if props, ok := schema["properties"].(map[string]any); ok && props[HostArgument] != nil {
					hostArg[d.Name] = true
				}
			}
		}
	}
	var results []string
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil && s.scriptTool(p.FunctionResponse.Name) {
				results = append(results, resultText(p.FunctionResponse.Response))
			}
		}
	}
	t, answer := s.decide(offered, len(results))
	schema := req.GenerationConfig.ResponseJSONSchema
	if schema == nil {
		schema = req.GenerationConfig.ResponseSchema
	}
	if t.call == nil && len(offered) == 0 && (schema != nil || req.GenerationConfig.ResponseMimeType == "application/json") {
		b, _ := json.Marshal(smallest(schema))
		t, answer = turn{text: string(b), jsonText: true}, "side json "+string(b)
	}
	s.record(Request{Wire: Gemini, Path: path, Stream: stream, Offered: offered, Results: results, Answer: answer})

	var part map[string]any
	if t.call != nil {
		args := maps.Clone(t.call.Args)
		if hostArg[t.call.Tool] {
			args[HostArgument] = true
		}
		part = map[string]any{"functionCall": map[string]any{"name": t.call.Tool, "args": args}}
	} else {
		part = map[string]any{"text": t.text}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": len(body) / 4, "candidatesTokenCount": 12, "totalTokenCount": len(body)/4 + 12},
		"modelVersion":  "fake-model",
		"responseId":    "resp_tw" + callID(len(results)),
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	sseHeaders(w)
	SSE(w, "", resp)
}

// scriptTool says whether name is one of the script's tools as a host
// names it.
func (s *Server) scriptTool(name string) bool {
	s.mu.Lock()
	steps := s.script.Steps
	s.mu.Unlock()
	return slices.ContainsFunc(steps, func(st Step) bool { return offeredName([]string{name}, st.Tool) != "" })
}

// smallest returns the smallest value a JSON schema (OpenAPI-style
// upper-case types included) accepts: required properties only, the first
// enum value, zero numbers, empty strings.
func smallest(schema map[string]any) any {
	if schema == nil {
		return map[string]any{}
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object", "":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			sub, _ := props[name].(map[string]any)
			out[name] = smallest(sub)
		}
		return out
	case "array":
		return []any{}
	case "string":
		return ""
	case "boolean":
		return false
	default:
		if min, ok := schema["minimum"].(float64); ok {
			return min
		}
		return 0
	}
}
