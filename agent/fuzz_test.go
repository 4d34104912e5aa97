package agent_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

var codeShape = regexp.MustCompile(`^[a-z][a-z_]*[a-z]$`)

// FuzzDispatchArguments sends arbitrary argument bytes to every tool. Bad
// input must come back as a design.md §5 envelope with a code of its own, never a
// panic and never browser_operation_failed (the code an uncoded Go error
// falls back to: a decoding error that escaped its code would show as it).
func FuzzDispatchArguments(f *testing.F) {
	tools := []string{"no_such_tool"}
	for _, p := range agent.Profiles {
		for _, t := range p.Tools {
			tools = append(tools, t.Name)
		}
	}
	seeds := []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"tabId":"t1"}`, `{"url":"http://127.0.0.1:1/"}`,
		`{"url":"javascript:alert(1)"}`, `{"url":"http://user:pw@a.example/"}`,
		`{"tabId":"t1","action":"sideways"}`, `{"tabId":"t1","url":"http://a.example","action":"back"}`,
		`{"observationId":"o1","action":{"type":"click","ref":"e1"}}`,
		`{"observationId":"o1","action":{"type":"scroll","deltaY":99999}}`,
		`{"observationId":"o1","action":{"type":"key","key":"F13"}}`,
		`{"assertion":"text_contains","value":""}`, `{"assertion":"nope","value":"x"}`,
		`{"steps":[]}`, `{"steps":[{"action":{"type":"click","ref":"e1"}}]}`, `{"jobId":"job-0"}`,
		`{"filename":"ü.txt","contentBase64":"////"}`, `{"filename":"../x","contentBase64":"aGk="}`,
		`{"toolId":"x","input":{}}`, `{"command":"list_pages"}`, `{"command":"act","page_context_token":"x"}`,
		`{"tabId":1e309}`, `{"textChars":-1}`, `{"cursor":"\u0000"}`,
	}
	for i := range tools {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	eng := consent.New(consent.Config{ReviewDelay: reviewDelay})
	const conv consent.ConversationID = "fuzz"
	eng.AddConversation(conv, "fuzz")
	d := agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: stacktest.GoneBrowser{}})
	f.Cleanup(d.Close)

	f.Fuzz(func(t *testing.T, pick uint8, args []byte) {
		tool := tools[int(pick)%len(tools)]
		// A bound, not a measurement: nothing here may wait for a person.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res := d.Call(ctx, conv, tool, json.RawMessage(args))
		if _, err := json.Marshal(res.Object); err != nil {
			t.Fatalf("%s: the envelope does not encode: %v", tool, err)
		}
		if okField, _ := res.Object["ok"].(bool); okField == res.IsError {
			t.Fatalf("%s: ok=%v but IsError=%v: %s", tool, res.Object["ok"], res.IsError, res.JSON())
		}
		if !res.IsError {
			return
		}
		code := res.Code()
		if !codeShape.MatchString(code) || code == string(errcode.BrowserOperationFailed) {
			t.Fatalf("%s %q: code %q: %s", tool, args, code, res.JSON())
		}
		if msg, _ := res.Object["error"].(string); msg == "" {
			t.Fatalf("%s %q: no message: %s", tool, args, res.JSON())
		}
		if ctx.Err() != nil {
			t.Fatalf("%s %q: the call waited out its context", tool, args)
		}
	})
}
