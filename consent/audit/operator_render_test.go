package audit

import (
	"strings"
	"testing"
	"time"
)

// The table names the operator and their key fingerprint (design.md §11).
func TestRenderTableShowsOperatorAndKey(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	recs := []Record{
		{Time: at, Kind: KindDecision, Decision: "denied", By: "operator", Operator: "ana", KeyFingerprint: "SHA256:abcdef", Origin: "https://a.test"},
		{Time: at, Kind: KindTakeOver, By: "operator", Operator: "local"},
		{Time: at, Kind: KindDecision, Decision: "timeout", By: "engine"},
	}
	var b strings.Builder
	if err := renderTable(&b, recs, 0, time.UTC); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	var head, ana, local, engine string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "BY"):
			head = l
		case strings.Contains(l, "denied"):
			ana = l
		case strings.Contains(l, "take_over"):
			local = l
		case strings.Contains(l, "timeout"):
			engine = l
		}
	}
	if !strings.Contains(head, "KEY") {
		t.Fatalf("no KEY column:\n%s", b.String())
	}
	if !strings.Contains(ana, " ana ") || !strings.Contains(ana, "SHA256:abcdef") {
		t.Fatalf("ana's decision row %q", ana)
	}
	if !strings.Contains(local, " local ") || !strings.Contains(engine, " engine ") {
		t.Fatalf("rows %q / %q", local, engine)
	}
}

// At 80 columns the table keeps who decided (BY) over the conversation:
// a team reads it for "who approved what" (the walk lost BY at 80).
func TestRenderTableKeepsByAt80(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	recs := []Record{
		{Time: at, Kind: KindDecision, Conversation: "codex · codex-mcp-client · 5f1a2b", Tab: "tab_8144993663", Gate: "navigation", Decision: "approved", By: "operator", Operator: "ana", KeyFingerprint: "SHA256:abcdefabcdefabcdef", WaitMS: 1200, Origin: "http://127.0.0.1:18808"},
	}
	var b strings.Builder
	if err := renderTable(&b, recs, 80, time.UTC); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "BY") || !strings.Contains(out, " ana ") || !strings.Contains(out, "http://127.0.0.1:18808") {
		t.Fatalf("at 80 columns the table lost who decided or the origin:\n%s", out)
	}
	// A token's revocation says which token, in the column a narrow
	// table keeps.
	b.Reset()
	if err := renderTable(&b, append(recs, Record{Time: at, Kind: KindRevoke, By: "operator", Operator: "local", Note: "agent token codex-2 revoked"}), 80, time.UTC); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "agent token codex-2 revoked") {
		t.Errorf("at 80 columns a token's revocation does not say which:\n%s", b.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("a row is wider than 80: %q", l)
		}
	}
}
