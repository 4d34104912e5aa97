package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// toolNames collects the names of the offered tools: {"name"},
// {"function":{"name"}} (Chat Completions), and the tools of a Responses
// namespace ({"type":"namespace","name":NS,"tools":[...]}, how Codex offers
// an MCP server's tools) as "NS/name".
func toolNames(tools []any) []string {
	var out []string
	for _, t := range tools {
		m, ok := t.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if inner, ok := m["tools"].([]any); ok {
			for _, n := range toolNames(inner) {
				out = append(out, name+nsSep+n)
			}
			continue
		}
		if name != "" {
			out = append(out, name)
		}
		if f, ok := m["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// nsSep joins a Responses namespace and a tool's name in Offered.
const nsSep = "/"

// responses answers POST /v1/responses in the OpenAI Responses streaming
// format Codex reads: response.created, response.output_item.added,
// response.function_call_arguments.delta/done (or response.output_text.delta
// /done), response.output_item.done, response.completed.
func (s *Server) responses(w http.ResponseWriter, path string, body []byte) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		Input  []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output any    `json:"output"`
		} `json:"input"`
		Tools []any `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	offered := toolNames(req.Tools)
	var results []string
	for _, it := range req.Input {
		if strings.HasSuffix(it.Type, "call_output") && strings.HasPrefix(it.CallID, idPrefix) {
			results = append(results, resultText(it.Output))
		}
	}
	t, answer := s.decide(offered, len(results))
	s.record(Request{Wire: Responses, Path: path, Stream: req.Stream, Offered: offered, Results: results, Answer: answer})

	n := len(results)
	respID := "resp_tw" + callID(n)
	var item map[string]any
	if t.call != nil {
		args, _ := json.Marshal(t.call.Args)
		item = map[string]any{"type": "function_call", "id": "fc_tw" + callID(n), "call_id": callID(n),
			"name": t.call.Tool, "arguments": string(args), "status": "completed"}
		if ns, name, ok := strings.Cut(t.call.Tool, nsSep); ok {
			item["namespace"], item["name"] = ns, name
		}
	} else {
		item = map[string]any{"type": "message", "id": "msg_tw" + callID(n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.text, "annotations": []any{}}}}
	}
	usage := map[string]any{
		"input_tokens": len(body) / 4, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 12, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": len(body)/4 + 12,
	}
	response := func(status string, output []any) map[string]any {
		r := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": req.Model, "output": output}
		if status == "completed" {
			r["usage"] = usage
		}
		return r
	}
	if !req.Stream {
		writeJSON(w, response("completed", []any{item}))
		return
	}
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		SSE(w, typ, fields)
	}
	sseHeaders(w)
	ev("response.created", map[string]any{"response": response("in_progress", []any{})})
	ev("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
	if t.call != nil {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		for _, part := range halves(item["arguments"].(string)) {
			ev("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": 0, "delta": part})
		}
		ev("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": 0, "arguments": item["arguments"]})
	} else {
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "id": item["id"], "role": "assistant", "status": "in_progress", "content": []any{}}})
		ev("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, part := range halves(t.text) {
			ev("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": part})
		}
		ev("response.output_text.done", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0, "text": t.text})
		ev("response.content_part.done", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": t.text, "annotations": []any{}}})
	}
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": response("completed", []any{item})})
}

// chat answers POST /v1/chat/completions in the Chat Completions format:
// chat.completion.chunk events ending in a finish_reason chunk, a usage
// chunk and data: [DONE] when the request streams, else one
// chat.completion.
func (s *Server) chat(w http.ResponseWriter, path string, body []byte) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    any    `json:"content"`
		} `json:"messages"`
		Tools []any `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	offered := toolNames(req.Tools)
	var results []string
	for _, m := range req.Messages {
		if m.Role == "tool" && strings.HasPrefix(m.ToolCallID, idPrefix) {
			results = append(results, resultText(m.Content))
		}
	}
	t, answer := s.decide(offered, len(results))
	s.record(Request{Wire: Chat, Path: path, Stream: req.Stream, Offered: offered, Results: results, Answer: answer})

	n := len(results)
	id, created := "chatcmpl-tw"+callID(n), time.Now().Unix()
	finish := "stop"
	var args string
	if t.call != nil {
		b, _ := json.Marshal(t.call.Args)
		args, finish = string(b), "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": len(body) / 4, "completion_tokens": 12, "total_tokens": len(body)/4 + 12}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": t.text}
		if t.call != nil {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": callID(n), "type": "function",
				"function": map[string]any{"name": t.call.Tool, "arguments": args}}}
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	chunk := func(delta map[string]any, finish any) {
		SSE(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	sseHeaders(w)
	if t.call != nil {
		chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": callID(n), "type": "function", "function": map[string]any{"name": t.call.Tool, "arguments": ""}}}}, nil)
		for _, part := range halves(args) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": part}}}}, nil)
		}
	} else {
		chunk(map[string]any{"role": "assistant", "content": ""}, nil)
		for _, part := range halves(t.text) {
			chunk(map[string]any{"content": part}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	SSE(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
		"choices": []any{}, "usage": usage})
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
