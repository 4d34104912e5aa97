package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// uploadTool is browser_upload (design.md §5).
var uploadTool = NewTool(ToolSpec{
	Name:  "browser_upload",
	Title: "Upload a file to a file input",
	Description: "Put a file into a file input of the page you just observed: ref is the file input (listed as sensitive; browser_act cannot touch it), filename the name the page sees, contentBase64 the bytes (your host may be another machine, so the bytes travel in the call)." +
		" Files over the console's limit (10 MiB by default) fail upload_too_large; managed policy may block uploads (upload_blocked). The person allows each upload, seeing the name, size and SHA-256." +
		" Only the input gets the file: submitting the form is a separate browser_act. The result is a receipt like browser_act's; the observation is used up." + descUncertain + descTabID,
}, (*Dispatcher).upload)

// DefaultMaxUploadBytes is --max-upload-bytes' default (design.md §5).
const DefaultMaxUploadBytes = 10 << 20

// maxFilenameBytes is the longest name most filesystems accept for one path element.
const maxFilenameBytes = 255

// upload runs browser_upload. The order of refusals is the contract: policy
// first (upload_blocked never shows a review, whatever the profile), then
// the size from the base64 length (upload_too_large before any decoding),
// and only then the tab, the read gate, the target and "Allow once".
func (d *Dispatcher) upload(ctx context.Context, conv consent.ConversationID, a UploadArgs) (Result, consent.TabID) {
	if d.policy != nil && d.policy.BlockUploads {
		return fail(errcode.Errorf(errcode.UploadBlocked, errcode.NextNone, "managed policy blocks browser uploads (blockBrowserUploads)")), ""
	}
	if n := decodedLen(a.ContentBase64); n > d.maxUploadBytes() {
		return fail(errcode.Errorf(errcode.UploadTooLarge, errcode.NextNone, "the file is %d bytes; this console accepts at most %d (--max-upload-bytes)", n, d.maxUploadBytes())), ""
	}
	if err := checkFilename(a.Filename); err != nil {
		return fail(err), ""
	}
	if a.ObservationID == "" {
		return fail(errcode.Errorf(errcode.StaleObservation, errcode.NextObserve, "observationId is required: observe first")), ""
	}
	data, err := base64.StdEncoding.DecodeString(a.ContentBase64)
	if err != nil {
		return fail(errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "contentBase64 is not standard padded base64: %v", err)), ""
	}
	if int64(len(data)) > d.maxUploadBytes() {
		return fail(errcode.Errorf(errcode.UploadTooLarge, errcode.NextNone, "the file is %d bytes; at most %d", len(data), d.maxUploadBytes())), ""
	}
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "upload")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	prep, err := p.dt.PrepareUpload(p.op.Context(), a.ObservationID, a.Ref)
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	sum := sha256.Sum256(data)
	if err := d.engine.Ask(p.op.Context(), consent.Request{
		Gate: consent.GateAction, Conversation: conv, Tab: tab, Origin: p.origin,
		Upload: &consent.Upload{
			Filename: a.Filename, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
			Ref: prep.Target.Ref, Role: prep.Target.Role, Name: prep.Target.Name,
		},
		Recheck: d.sameOrigin(tab, p.origin),
	}); err != nil {
		prep.Release()
		return fail(opErr(p.op, err)), tab
	}
	dir, path, err := stage(a.Filename, data)
	if err != nil {
		prep.Release()
		return fail(errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextNone, "could not stage the file: %v", err)), tab
	}
	// SetFile leaves the input with an in-memory copy, so the bytes on
	// disk live only for the length of this call.
	defer os.RemoveAll(dir)
	receipt, err := prep.SetFile(p.op.Context(), path, int64(len(data)))
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	return ok(map[string]any{
		"dispatched": receipt.Dispatched,
		"outcome":    receipt.Outcome,
		"next":       string(errcode.NextObserve),
	}), tab
}

func (d *Dispatcher) maxUploadBytes() int64 {
	if d.maxUpload > 0 {
		return d.maxUpload
	}
	return DefaultMaxUploadBytes
}

// decodedLen is the exact decoded size of padded standard base64 of length
// len(s) (an upper bound for malformed input), computed without decoding.
func decodedLen(s string) int64 {
	n := int64(len(s))
	pad := int64(0)
	for i := len(s) - 1; i >= 0 && pad < 2 && s[i] == '='; i-- {
		pad++
	}
	return n/4*3 + (n%4)*3/4 - pad
}

// checkFilename accepts one path element a page may see as a file's name:
// no directories, no control characters, nothing a filesystem refuses.
func checkFilename(name string) error {
	bad := func(why string) error {
		return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "filename %s", why)
	}
	switch {
	case name == "":
		return bad("is required")
	case len(name) > maxFilenameBytes:
		return bad("is longer than 255 bytes")
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case name == "." || name == "..":
		return bad("must name a file")
	case strings.ContainsAny(name, `/\`):
		return bad("must not contain a directory (no / or \\)")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return bad("must not contain control characters")
	}
	return nil
}

// stage writes data as name in a new private directory (0700, file 0600):
// the file's base name is what Chromium reports to the page.
func stage(name string, data []byte) (dir, path string, err error) {
	dir, err = os.MkdirTemp("", "tabwarden-upload-")
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, path, nil
}

// UploadArgs are browser_upload's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type UploadArgs struct {
	TabID         string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	ObservationID string `json:"observationId" jsonschema:"the observation the file input's ref comes from; used up by this upload"`
	Ref           string `json:"ref" jsonschema:"ref of the file input (listed as sensitive in the observation)"`
	Filename      string `json:"filename" jsonschema:"the file name the page sees, without any directory"`
	ContentBase64 string `json:"contentBase64" jsonschema:"the file's bytes, standard padded base64"`
}
