package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func sampleRecord(i int) Record {
	return Record{
		Time:         time.Date(2026, 11, 30, 1, 2, 3, i*1000, time.UTC),
		Kind:         KindDecision,
		Conversation: "default·claude-code·a1b2",
		Tab:          "t3",
		Origin:       "https://shop.example:8443",
		Gate:         "action",
		Review:       fmt.Sprintf("r%d", i),
		ReviewKind:   "act",
		Decision:     "approved",
		By:           "operator",
		WaitMS:       int64(1200 + i),
		Tool:         "browser_act",
		Action:       "fill",
		Input:        "{text: string(12)}",
		Size:         12,
		SHA256:       strings.Repeat("ab", 32),
		Note:         "line\nbreak \"quoted\" é",
	}
}

func TestFileLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{sampleRecord(1), {Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Kind: KindTakeOver, Tab: "t1"}}
	for _, r := range want {
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("file has %d lines, want %d (a record must be exactly one line):\n%s", len(lines), len(want), raw)
	}
	if strings.Contains(lines[1], `"conversation"`) || strings.Contains(lines[1], `"waitMs"`) {
		t.Errorf("empty fields must be omitted: %s", lines[1])
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(lines[0])); err != nil || compact.String() != lines[0] {
		t.Errorf("line is not compact JSON: %s", lines[0])
	}

	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestFileLogModes(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "state", "tabwarden", "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p, want := range map[string]os.FileMode{
		path:                             0o600,
		filepath.Dir(path):               0o700,
		filepath.Dir(filepath.Dir(path)): 0o700,
	} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		// umask can only remove bits, so any extra bit is a bug.
		if got := st.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s mode %v, want at most %v", p, got, want)
		}
	}
}

func TestFileLogAppendsNeverTruncates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	for i := range 3 {
		l, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Write(sampleRecord(i)); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Review != "r0" || recs[2].Review != "r2" {
		t.Fatalf("reopening must append: %+v", recs)
	}
}

func TestFileLogConcurrentWritersWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 40
	// A long field makes a torn interleaving likely if writes were split.
	pad := strings.Repeat("x", 8000)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rec := Record{Time: time.Now(), Kind: KindToolCall, Note: fmt.Sprintf("%d-%d", w, i), Input: pad}
				if err := l.Write(rec); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	l.Close()

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("concurrent writes produced a bad line: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Input != pad {
			t.Fatalf("record %s has a mangled field", r.Note)
		}
		seen[r.Note] = true
	}
	if len(recs) != writers*each || len(seen) != writers*each {
		t.Fatalf("got %d records (%d distinct), want %d", len(recs), len(seen), writers*each)
	}
}

func TestFileLogFsyncsAfterEachWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	syncs := 0
	l.sync = func(f *os.File) error {
		syncs++
		// The line must already be in the file when it is synced, or the
		// sync would not cover it.
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got := strings.Count(string(raw), "\n"); got != syncs {
			t.Errorf("sync %d sees %d lines", syncs, got)
		}
		return f.Sync() // the real fsync still runs
	}
	for i := range 3 {
		if err := l.Write(sampleRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if syncs != 3 {
		t.Fatalf("%d fsyncs for 3 writes", syncs)
	}
}

func TestFileLogFsyncFailureIsReturned(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	boom := errors.New("disk on fire")
	l.sync = func(*os.File) error { return boom }
	if err := l.Write(sampleRecord(0)); !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want the fsync error (the caller must fail closed)", err)
	}
}

func TestFileLogClosed(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := l.Write(sampleRecord(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	if _, err := Open(""); !errors.Is(err, ErrNoPath) {
		t.Fatalf("Open(\"\") = %v", err)
	}
	if _, err := OpenDaily(""); !errors.Is(err, ErrNoPath) {
		t.Fatalf("OpenDaily(\"\") = %v", err)
	}
}

func TestFileLogStampsZeroTime(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stamp := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	l.now = func() time.Time { return stamp }
	if err := l.Write(Record{Kind: KindSession}); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !recs[0].Time.Equal(stamp) {
		t.Fatalf("got %+v, want time %v", recs, stamp)
	}
}

// A crash mid-write leaves a fragment without a newline; the next record
// must still land on its own line and be readable.
func TestFileLogRepairsTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, []byte(`{"time":"2026-11-30T01:00:00Z","kind":"decision"}`+"\n"+`{"time":"2026-11-30T01:00:01Z","ki`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(sampleRecord(7)); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(sampleRecord(8)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	recs, err := ReadFile(path)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || le.Torn || !errors.Is(err, ErrBadLine) {
		t.Fatalf("err = %v, want the old fragment reported as bad line 2", err)
	}
	if len(recs) != 3 || recs[1].Review != "r7" || recs[2].Review != "r8" {
		t.Fatalf("records after a torn tail: %+v", recs)
	}
}

func TestOpenDailyFilesByRecordDate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tabwarden")
	l, err := OpenDaily(dir)
	if err != nil {
		t.Fatal(err)
	}
	today := filepath.Join(dir, "audit-"+time.Now().Format("2006-01-02")+".jsonl")
	if _, err := os.Stat(today); err != nil {
		t.Fatalf("today's file is not created at open: %v", err)
	}
	before := time.Date(2026, 12, 31, 23, 59, 59, 0, time.Local)
	after := time.Date(2027, 1, 1, 0, 0, 1, 0, time.Local)
	for i, at := range []time.Time{before, after, before} {
		if err := l.Write(Record{Time: at, Kind: KindDecision, Review: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.Path(), filepath.Join(dir, "audit-2026-12-31.jsonl"); got != want {
		t.Errorf("Path = %s, want %s", got, want)
	}
	l.Close()

	for file, reviews := range map[string][]string{
		"audit-2026-12-31.jsonl": {"0", "2"},
		"audit-2027-01-01.jsonl": {"1"},
	} {
		recs, err := ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Review)
		}
		if !reflect.DeepEqual(got, reviews) {
			t.Errorf("%s holds reviews %v, want %v", file, got, reviews)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	now := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if got, want := DefaultPath(now), "/xdg/state/tabwarden/audit-2026-11-30.jsonl"; got != want {
		t.Errorf("DefaultPath = %s, want %s", got, want)
	}
	// A relative XDG_STATE_HOME is invalid per the XDG spec and ignored.
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/op")
	if got, want := DefaultPath(now), "/home/op/.local/state/tabwarden/audit-2026-11-30.jsonl"; got != want {
		t.Errorf("DefaultPath = %s, want %s", got, want)
	}
	// The date is the one in now's location, not UTC's.
	east := now.In(time.FixedZone("UTC+2", 2*3600))
	if got := DefaultPath(east); !strings.HasSuffix(got, "audit-2026-12-01.jsonl") {
		t.Errorf("DefaultPath(local) = %s", got)
	}
}

func TestFileLogOnDeviceSkipsFsync(t *testing.T) {
	l, err := Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.sync = func(*os.File) error { return errors.New("fsync of a device") }
	if err := l.Write(sampleRecord(0)); err != nil {
		t.Fatalf("writing to %s: %v", os.DevNull, err)
	}
}
