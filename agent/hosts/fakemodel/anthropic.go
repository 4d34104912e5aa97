package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// anthropic answers POST /v1/messages in the Messages API's format: an SSE
// stream (message_start, content_block_start, content_block_delta with
// input_json_delta or text_delta, content_block_stop, message_delta with
// the stop reason, message_stop) when the request streams, else one JSON
// message.
func (s *Server) anthropic(w http.ResponseWriter, path string, body []byte) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad JSON"}}`, http.StatusBadRequest)
		return
	}
	var offered []string
	for _, t := range req.Tools {
		offered = append(offered, t.Name)
	}
	var results []string
	for _, m := range req.Messages {
		var blocks []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   any    `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && strings.HasPrefix(b.ToolUseID, idPrefix) {
				results = append(results, resultText(b.Content))
			}
		}
	}
	t, answer := s.decide(offered, len(results))
	s.record(Request{Wire: Anthropic, Path: path, Stream: req.Stream, Offered: offered, Results: results, Answer: answer})

	id := "msg_tw" + callID(len(results))
	var block map[string]any
	stop := "end_turn"
	if t.call != nil {
		block = map[string]any{"type": "tool_use", "id": callID(len(results)), "name": t.call.Tool, "input": t.call.Args}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": t.text}
	}
	usage := map[string]any{"input_tokens": len(body) / 4, "output_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if !req.Stream {
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	sseHeaders(w)
	SSE(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": len(body) / 4, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	if t.call != nil {
		SSE(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": callID(len(results)), "name": t.call.Tool, "input": map[string]any{},
		}})
		args, _ := json.Marshal(t.call.Args)
		for _, part := range halves(string(args)) {
			SSE(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
	} else {
		SSE(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range halves(t.text) {
			SSE(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": part}})
		}
	}
	SSE(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	SSE(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 12}})
	SSE(w, "message_stop", map[string]any{"type": "message_stop"})
}
