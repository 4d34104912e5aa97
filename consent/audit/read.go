package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

var (
	// ErrTornLine: the last line is an incomplete record, as a crash in
	// the middle of a write leaves it. Everything before it was read.
	ErrTornLine = errors.New("torn last line (incomplete write)")
	// ErrBadLine: a complete line that is not a record. The lines around
	// it were read.
	ErrBadLine = errors.New("line is not an audit record")
)

// LineError locates a line Read skipped. It matches ErrTornLine or
// ErrBadLine with errors.Is.
type LineError struct {
	Line int   // 1-based
	Torn bool  // the last line, without a newline
	Err  error // the decode error
}

func (e *LineError) Error() string {
	what := ErrBadLine
	if e.Torn {
		what = ErrTornLine
	}
	return fmt.Sprintf("line %d: %v: %v", e.Line, what, e.Err)
}

func (e *LineError) Unwrap() []error {
	if e.Torn {
		return []error{ErrTornLine, e.Err}
	}
	return []error{ErrBadLine, e.Err}
}

// Read parses a JSONL audit log. It never gives up on the whole log for a
// bad line: it returns every record it could parse, in file order, and an
// error joining one *LineError per skipped line (a torn last line, or a
// line a later append followed). Unknown fields are ignored so an older
// binary can read a newer log. The records are valid even when the error
// is not nil; only an I/O error from r stops reading early.
func Read(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	var (
		recs []Record
		errs []error
	)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return recs, fmt.Errorf("audit: read line %d: %w", n, err)
		}
		complete := err == nil
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var rec Record
			if derr := decodeRecord(t, &rec); derr != nil {
				errs = append(errs, &LineError{Line: n, Torn: !complete, Err: derr})
			} else {
				recs = append(recs, rec)
			}
		}
		if !complete {
			return recs, errors.Join(errs...)
		}
	}
}

func decodeRecord(b []byte, rec *Record) error {
	if err := json.Unmarshal(b, rec); err != nil {
		return err
	}
	if rec.Kind == "" || rec.Time.IsZero() {
		return errors.New("missing time or kind")
	}
	return nil
}

// ReadFile is Read on the file at path.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	return Read(f)
}
