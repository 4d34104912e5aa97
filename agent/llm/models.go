package llm

import "strings"

// visionPrefixes are model-id prefixes (lower case, after any "vendor/"
// path) of models that accept image input. Anything else is text-only
// until the operator says --images on: sending a screenshot to a model
// that cannot read it wastes tokens or fails the request.
var visionPrefixes = []string{
	"gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-5", "o3", "o4", "chatgpt-4o",
	"claude-3", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4", "claude-4",
	"gemini", "gemma3", "gemma-3", "llava", "bakllava", "minicpm-v", "pixtral",
	"llama-4", "llama3.2-vision", "llama-3.2-11b-vision", "llama-3.2-90b-vision",
	"qwen2-vl", "qwen2.5-vl", "qwen2.5vl", "qwen3-vl", "mistral-small3.1", "mistral-small-3.1",
}

// VisionModel reports whether the capability table says model accepts
// images.
func VisionModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range visionPrefixes {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// Price is US dollars per million tokens.
type Price struct{ In, Out float64 }

// prices are list prices of well-known hosted models, longest prefix first
// where prefixes overlap; a cost estimate is shown only for these.
var prices = []struct {
	prefix string
	p      Price
}{
	{"gpt-4o-mini", Price{0.15, 0.60}},
	{"gpt-4o", Price{2.50, 10}},
	{"gpt-4.1-nano", Price{0.10, 0.40}},
	{"gpt-4.1-mini", Price{0.40, 1.60}},
	{"gpt-4.1", Price{2, 8}},
	{"gpt-5-nano", Price{0.05, 0.40}},
	{"gpt-5-mini", Price{0.25, 2}},
	{"gpt-5", Price{1.25, 10}},
	{"claude-haiku-4", Price{1, 5}},
	{"claude-sonnet-4", Price{3, 15}},
	{"claude-opus-4", Price{15, 75}},
	{"claude-3-5-haiku", Price{0.80, 4}},
	{"claude-3-5-sonnet", Price{3, 15}},
	{"claude-3-7-sonnet", Price{3, 15}},
}

// PriceOf is the table's price of model, ok false when unknown (local
// models, anything not listed).
func PriceOf(model string) (Price, bool) {
	m := strings.ToLower(model)
	for _, e := range prices {
		if strings.HasPrefix(m, e.prefix) {
			return e.p, true
		}
	}
	return Price{}, false
}
