package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrClosed is returned by Write after Close. The caller must fail the
// operation closed: an unrecorded decision must not be acted on.
var ErrClosed = errors.New("audit log closed")

// ErrNoPath is returned by Open for an empty path, which is what
// DefaultPath yields when neither XDG_STATE_HOME nor a home directory is
// known.
var ErrNoPath = errors.New("no audit log path: set XDG_STATE_HOME or HOME, or pass --audit FILE")

const (
	fileMode = 0o600
	dirMode  = 0o700
	// dayLayout names daily files; it is also how Read's callers can find
	// a day's file.
	dayLayout = "2006-01-02"
)

// FileLog is a Sink appending one compact JSON line per record to an
// append-only file. Each Write is one write(2) of the whole line followed by
// fsync, under a mutex: concurrent writers never interleave inside a line,
// and Write returns only once the record is durable. Another process
// appending to the same file with O_APPEND still gets whole lines on a local
// file system because each line is a single write.
//
// A FileLog made by Open writes to one file forever (an explicit --audit
// FILE is the operator's choice and is never renamed or rotated). A FileLog
// made by OpenDaily writes each record to the file named after the local
// date of the record's own Time, so a console left running over midnight
// starts today's file with the first record stamped today, and a record is
// never filed under the wrong day.
type FileLog struct {
	mu     sync.Mutex
	dir    string // daily mode when non-empty
	day    string // date of f in daily mode
	path   string
	f      *os.File
	closed bool
	// regular is false for a device or pipe, which is written but not
	// fsynced.
	regular bool
	// torn is set when a write may have left a partial line; the next
	// write starts with a newline so the torn fragment stays on its own
	// line and the new record stays parseable.
	torn bool

	// Hooks for tests: the fsync of a file and of a directory, and the clock
	// used to stamp records without a Time.
	sync    func(*os.File) error
	now     func() time.Time
	openHit func(path string)
}

// Open opens (creating if needed) the append-only log at path. Missing
// parent directories are created with mode 0700 and a new file with mode
// 0600; an existing file's mode is left as the operator set it. If the file
// ends in a torn line (a crash mid-write), the next record starts on a new
// line.
func Open(path string) (*FileLog, error) {
	if path == "" {
		return nil, ErrNoPath
	}
	l := newFileLog()
	if err := l.openFile(path); err != nil {
		return nil, err
	}
	return l, nil
}

// OpenDaily opens a log that writes each record to
// dir/audit-YYYY-MM-DD.jsonl for the local date of the record's Time
// (DefaultDir is the usual dir). The file for today is opened at once so a
// permission problem surfaces at start-up, not at the first decision.
func OpenDaily(dir string) (*FileLog, error) {
	if dir == "" {
		return nil, ErrNoPath
	}
	l := newFileLog()
	l.dir = dir
	day := l.now().Local().Format(dayLayout)
	if err := l.openFile(filepath.Join(dir, dayFile(day))); err != nil {
		return nil, err
	}
	l.day = day
	return l, nil
}

func newFileLog() *FileLog {
	return &FileLog{sync: (*os.File).Sync, now: time.Now}
}

// DefaultDir is $XDG_STATE_HOME/tabwarden, or ~/.local/state/tabwarden when
// XDG_STATE_HOME is unset or not absolute (as the XDG spec requires). It is
// "" when no home directory is known either.
func DefaultDir() string {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "tabwarden")
}

// DefaultPath is the log file for now's date in DefaultDir:
// $XDG_STATE_HOME/tabwarden/audit-YYYY-MM-DD.jsonl. The date is taken in
// now's location. It is "" when DefaultDir is; Open("") fails with ErrNoPath.
func DefaultPath(now time.Time) string {
	dir := DefaultDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, dayFile(now.Format(dayLayout)))
}

func dayFile(day string) string { return "audit-" + day + ".jsonl" }

// Path is the file records go to; in daily mode, the file of the last
// record written (before any write, today's file at open).
func (l *FileLog) Path() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.path
}

// openFile opens path for appending and replaces l.f. Called with l.mu held
// (or before l is shared).
func (l *FileLog) openFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("audit: create %s: %w", dir, err)
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	// O_RDWR rather than O_WRONLY only so the last byte can be checked for
	// a torn line; every write still goes through O_APPEND.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: open %s: %w", path, err)
	}
	// --audit /dev/stderr or a pipe: nothing to repair or fsync there
	// (fsync would fail with EINVAL and with it every decision).
	regular := st.Mode().IsRegular()
	torn := false
	if regular {
		if torn, err = endsTorn(f, st.Size()); err != nil {
			f.Close()
			return fmt.Errorf("audit: open %s: %w", path, err)
		}
	}
	if created {
		// The new directory entry must be durable too, or a crash could
		// lose a file whose records were all fsynced.
		if err := syncDir(dir); err != nil {
			f.Close()
			return fmt.Errorf("audit: sync %s: %w", dir, err)
		}
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.path, l.torn, l.regular = f, path, torn, regular
	if l.openHit != nil {
		l.openHit(path)
	}
	return nil
}

// endsTorn reports whether f (of size bytes) is non-empty and does not end
// in a newline.
func endsTorn(f *os.File, size int64) (bool, error) {
	if size == 0 {
		return false, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], size-1); err != nil && err != io.EOF {
		return false, err
	}
	return b[0] != '\n', nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Write appends rec as one JSON line and fsyncs the file before returning
// (a device or pipe given as the path is written but cannot be fsynced).
// A zero rec.Time is stamped with the current time. Any error means the
// record may not be durable; the caller must not dispatch what it allows.
func (l *FileLog) Write(rec Record) error {
	if rec.Time.IsZero() {
		rec.Time = l.now()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	line = append(line, '\n')

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.dir != "" {
		if day := rec.Time.Local().Format(dayLayout); day != l.day {
			if err := l.openFile(filepath.Join(l.dir, dayFile(day))); err != nil {
				return err
			}
			l.day = day
		}
	}
	if l.torn {
		line = append([]byte{'\n'}, line...)
	}
	n, err := l.f.Write(line)
	if err != nil {
		// Only a partial write can leave a fragment behind.
		l.torn = n > 0
		return fmt.Errorf("audit: write %s: %w", l.path, err)
	}
	l.torn = false
	if !l.regular {
		return nil
	}
	if err := l.sync(l.f); err != nil {
		return fmt.Errorf("audit: fsync %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file. Records already written are durable; later Writes
// return ErrClosed. Close is idempotent.
func (l *FileLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.f.Close()
}
