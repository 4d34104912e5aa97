package webmcp

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// invoke runs one tool and returns its raw result. ctx carries the
// execution deadline and take-over cancellation; when it ends first, the
// call is cancelled in the page and ctx's error is returned.
func (s *Site) invoke(ctx context.Context, frame proto.PageFrameID, name string, input json.RawMessage) (json.RawMessage, error) {
	if s.mode == ModeNative {
		return s.invokeNative(ctx, frame, name, input)
	}
	return s.invokePolyfill(ctx, frame, name, input)
}

var errToolFailed = errors.New("the site tool failed")

func (s *Site) invokeNative(ctx context.Context, frame proto.PageFrameID, name string, input json.RawMessage) (json.RawMessage, error) {
	sid := s.sessionFor(frame)
	c, done := s.sess(ctx, sid)
	res, err := WebMCPInvokeTool{FrameID: frame, ToolName: name, Input: input}.Call(c)
	done()
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	w := make(chan WebMCPToolResponded, 1)
	s.mu.Lock()
	if e, ok := s.early[res.InvocationID]; ok {
		delete(s.early, res.InvocationID)
		w <- e
	} else {
		s.waiters[res.InvocationID] = w
	}
	s.mu.Unlock()
	select {
	case e := <-w:
		switch e.Status {
		case "Completed":
			if len(e.Output) == 0 {
				return json.RawMessage("null"), nil
			}
			return e.Output, nil
		case "Canceled":
			return nil, context.Canceled
		default:
			return nil, errToolFailed
		}
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.waiters, res.InvocationID)
		s.mu.Unlock()
		c, done := s.sess(context.Background(), sid)
		defer done()
		_ = WebMCPCancelInvocation{InvocationID: res.InvocationID}.Call(c)
		return nil, ctx.Err()
	}
}

func (s *Site) invokePolyfill(ctx context.Context, frame proto.PageFrameID, name string, input json.RawMessage) (json.RawMessage, error) {
	group := "tabwarden-" + randomID()
	c, done := s.sess(ctx, "")
	bc, br, err := s.bridge(c, frame)
	done()
	sid := bc.sid
	release := func() {
		c, done := s.sess(context.Background(), sid)
		defer done()
		_ = proto.RuntimeReleaseObjectGroup{ObjectGroup: group}.Call(c)
	}
	defer release()
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	callID := randomID()
	arg := func(v string) *proto.RuntimeCallArgument { return &proto.RuntimeCallArgument{Value: gson.New(v)} }
	type reply struct {
		r   *proto.RuntimeCallFunctionOnResult
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		r, err := proto.RuntimeCallFunctionOn{FunctionDeclaration: `function (n, i, c) { return this("invoke", n, i, c); }`,
			ObjectID: br, Arguments: []*proto.RuntimeCallArgument{arg(name), arg(string(input)), arg(callID)},
			AwaitPromise: true, ReturnByValue: true, ObjectGroup: group}.Call(session{p: s.p, ctx: ctx, sid: sid})
		ch <- reply{r, err}
	}()
	select {
	case rep := <-ch:
		if rep.err != nil {
			if ctx.Err() != nil {
				s.cancelPolyfill(sid, br, callID)
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("invoke: %w", rep.err)
		}
		if rep.r.ExceptionDetails != nil {
			return nil, errToolFailed
		}
		var out struct {
			OK       bool    `json:"ok"`
			Canceled bool    `json:"canceled"`
			Result   *string `json:"result"`
		}
		if err := json.Unmarshal([]byte(rep.r.Result.Value.Str()), &out); err != nil {
			return nil, errToolFailed
		}
		switch {
		case out.Canceled:
			return nil, context.Canceled
		case !out.OK || out.Result == nil:
			return nil, errToolFailed
		}
		return json.RawMessage(*out.Result), nil
	case <-ctx.Done():
		s.cancelPolyfill(sid, br, callID)
		return nil, ctx.Err()
	}
}

func (s *Site) cancelPolyfill(sid proto.TargetSessionID, br proto.RuntimeRemoteObjectID, callID string) {
	c, done := s.sess(context.Background(), sid)
	defer done()
	_, _ = proto.RuntimeCallFunctionOn{FunctionDeclaration: `function (c) { return this("cancel", c); }`,
		ObjectID: br, Arguments: []*proto.RuntimeCallArgument{{Value: gson.New(callID)}}}.Call(c)
}
