package audit

import (
	"errors"
	"strings"
	"testing"
)

const twoGood = `{"time":"2026-11-30T01:00:00Z","kind":"decision","review":"r1"}
{"time":"2026-11-30T01:00:01Z","kind":"take_over","tab":"t1"}
`

func TestReadTornLastLine(t *testing.T) {
	recs, err := Read(strings.NewReader(twoGood + `{"time":"2026-11-30T01:00:02Z","kind":"dec`))
	if len(recs) != 2 || recs[0].Review != "r1" || recs[1].Tab != "t1" {
		t.Fatalf("records before a torn line must survive: %+v", recs)
	}
	var le *LineError
	if !errors.Is(err, ErrTornLine) || !errors.As(err, &le) || le.Line != 3 || !le.Torn {
		t.Fatalf("err = %v, want a torn line 3", err)
	}
	if errors.Is(err, ErrBadLine) {
		t.Fatalf("a torn last line is not a bad line: %v", err)
	}
}

func TestReadBadMiddleLineKeepsTheRest(t *testing.T) {
	in := `{"time":"2026-11-30T01:00:00Z","kind":"decision","review":"r1"}
not json at all

{"kind":"decision"}
{"time":"2026-11-30T01:00:01Z","kind":"take_over","tab":"t1","futureField":{"x":1}}`
	recs, err := Read(strings.NewReader(in))
	if len(recs) != 2 || recs[1].Tab != "t1" {
		t.Fatalf("records: %+v", recs)
	}
	if !errors.Is(err, ErrBadLine) || errors.Is(err, ErrTornLine) {
		t.Fatalf("err = %v, want bad lines only (a complete last line without newline is fine)", err)
	}
	for _, want := range []string{"line 2:", "line 4:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestReadClean(t *testing.T) {
	recs, err := Read(strings.NewReader(twoGood))
	if err != nil || len(recs) != 2 {
		t.Fatalf("Read = %d records, %v", len(recs), err)
	}
	recs, err = Read(strings.NewReader(""))
	if err != nil || len(recs) != 0 {
		t.Fatalf("empty log: %d records, %v", len(recs), err)
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadIOError(t *testing.T) {
	boom := errors.New("EIO")
	if _, err := Read(failingReader{boom}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}
