package dom

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// PreparedUpload is a file input chosen for browser_upload, waiting for its
// gate. As with Prepared, exactly one of SetFile and Release must follow,
// and until then the observation's clock is stopped.
//
// File inputs are sensitive for browser_act (sign_in_required); this is the
// one path allowed to target them, and it only ever sets a file the
// operator approved by name, size and digest.
type PreparedUpload struct {
	Target Target

	held
}

// PrepareUpload checks that ref, in observation obsID, is a connected,
// enabled file input, and returns it for the review.
func (t *Tab) PrepareUpload(ctx context.Context, obsID, ref string) (*PreparedUpload, error) {
	if ref == "" {
		return nil, invalid("upload needs ref: the file input's ref from the observation")
	}
	o, err := t.freshObservation(ctx, obsID)
	if err != nil {
		return nil, err
	}
	tg, err := t.fileTarget(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &PreparedUpload{Target: tg, held: t.hold(o)}, nil
}

func (t *Tab) fileTarget(ctx context.Context, ref string) (Target, error) {
	var d struct {
		jsErr
		Role     string `json:"role"`
		Name     string `json:"name"`
		Disabled bool   `json:"disabled"`
		Tag      string `json:"tag"`
		Type     string `json:"type"`
	}
	if err := t.runJSON(ctx, &d, "target", ref); err != nil {
		return Target{}, cdpedge.Failed(ctx, "prepare upload", err)
	}
	if err := d.toError(ref); err != nil {
		return Target{}, err
	}
	if d.Tag != "input" || d.Type != "file" {
		return Target{}, invalid("%s is %s %s, not a file input", ref, d.Role, quote(d.Name))
	}
	if d.Disabled {
		return Target{}, jsErr{Err: "element_disabled", Detail: d.Role + " " + quote(d.Name)}.toError(ref)
	}
	return Target{Ref: ref, Role: d.Role, Name: d.Name, Sensitive: true}, nil
}

// Release ends a PreparedUpload that will not run; the observation is not consumed.
func (p *PreparedUpload) Release() { p.release() }

// SetFile gives the file at path (whose base name is the name the page
// sees) to the input, once. It consumes the observation, re-checks it and
// the target, then sets the file with DOM.setFileInputFiles, which fires the
// input's input and change events as a user's pick would.
//
// Chromium reads a path-backed File lazily (at form submission, or when a
// script reads it), so the input's file is then replaced by an in-memory
// copy made in our isolated world: once SetFile returns, the caller may
// delete path and the page still submits the exact bytes. wantSize is
// checked against the copy.
func (p *PreparedUpload) SetFile(ctx context.Context, path string, wantSize int64) (Receipt, error) {
	t := p.tab
	if err := p.use(ctx, "upload"); err != nil {
		return Receipt{}, err
	}
	if _, err := t.fileTarget(ctx, p.Target.Ref); err != nil {
		return Receipt{}, err
	}
	obj, err := t.fileInput(ctx, p.Target.Ref)
	if err != nil {
		return Receipt{}, err
	}
	pg, cancel := t.call(ctx)
	defer cancel()
	defer func() { _ = proto.RuntimeReleaseObject{ObjectID: obj}.Call(pg) }()
	t.inputStarts()
	if err := (proto.DOMSetFileInputFiles{Files: []string{path}, ObjectID: obj}).Call(pg); err != nil {
		return Receipt{}, cdpedge.AfterInput(ctx, "upload", err)
	}
	res, err := proto.RuntimeCallFunctionOn{
		ObjectID: obj, FunctionDeclaration: inMemoryCopy, AwaitPromise: true, ReturnByValue: true,
	}.Call(pg)
	if err == nil && res.ExceptionDetails != nil {
		err = fmt.Errorf("%s", res.ExceptionDetails.Text)
	}
	if err != nil {
		return Receipt{}, cdpedge.AfterInput(ctx, "upload copy", err)
	}
	var got struct {
		Size int64 `json:"size"`
	}
	if jerr := json.Unmarshal([]byte(res.Result.Value.Str()), &got); jerr != nil || got.Size != wantSize {
		return Receipt{}, cdpedge.AfterInput(ctx, "upload", fmt.Errorf("the input holds %d bytes, want %d", got.Size, wantSize))
	}
	return Receipt{Dispatched: true, Outcome: "not_yet_verified", Next: "observe"}, nil
}

// inMemoryCopy runs with this = the file input, in the isolated world: the
// DataTransfer and File it builds are invisible to page scripts until they
// read input.files, where they see the same name, type and bytes.
const inMemoryCopy = `async function () {
  const f = this.files && this.files[0];
  if (!f) throw new Error('the input holds no file');
  const buf = await f.arrayBuffer();
  const dt = new DataTransfer();
  dt.items.add(new File([buf], f.name, { type: f.type, lastModified: f.lastModified }));
  this.files = dt.files;
  return JSON.stringify({ size: buf.byteLength });
}`

// fileInput returns a remote handle on ref's element in the isolated world.
// The ref map is private to world.js (refs never leave the isolated world),
// so the handle is taken while __tw.target resolves the ref: its first
// WeakRef deref is the ref's element. WeakRef here is the isolated world's
// own, so page scripts never see the wrapper; the element is checked to be a
// connected file input before it is returned.
func (t *Tab) fileInput(ctx context.Context, ref string) (proto.RuntimeRemoteObjectID, error) {
	id, err := t.worldID(ctx)
	if err != nil {
		return "", cdpedge.Failed(ctx, "upload", err)
	}
	expr := `(() => {
  if (!globalThis.__tw) return null;
  const d = WeakRef.prototype.deref;
  let el;
  WeakRef.prototype.deref = function () { const v = d.call(this); if (el === undefined) el = v || null; return v; };
  try { __tw.target(` + strconv.Quote(ref) + `); } finally { WeakRef.prototype.deref = d; }
  return el && el.isConnected && el.localName === 'input' && el.type === 'file' ? el : null;
})()`
	pg, cancel := t.call(ctx)
	defer cancel()
	res, err := proto.RuntimeEvaluate{Expression: expr, ContextID: id, Silent: true}.Call(pg)
	if err != nil {
		return "", cdpedge.Failed(ctx, "upload", err)
	}
	if res.ExceptionDetails != nil {
		return "", cdpedge.Failed(ctx, "upload", fmt.Errorf("isolated world: %s", res.ExceptionDetails.Text))
	}
	if res.Result.ObjectID == "" {
		return "", errcode.Errorf(errcode.StaleElement, errcode.NextObserve, "element %s is no longer a file input in the page", ref)
	}
	return res.Result.ObjectID, nil
}
