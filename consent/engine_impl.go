package consent

import (
	"context"
	"errors"
)

// Placeholder bodies: replaced by the real implementation.
var errUnimplemented = errors.New("unimplemented")

type impl struct{}
type opImpl struct{}

func newEngine(cfg Config) *Engine                             { return &Engine{} }
func (e *impl) profile() Profile                               { return "" }
func (e *impl) addConversation(id ConversationID, name string) {}
func (e *impl) removeConversation(id ConversationID)           {}
func (e *impl) putTab(t TabInfo)                               {}
func (e *impl) removeTab(id TabID)                             {}
func (e *impl) owner(id TabID) (ConversationID, bool)          { return "", false }
func (e *impl) begin(ctx context.Context, conv ConversationID, tab TabID, name string) (*Op, error) {
	return nil, errUnimplemented
}
func (e *impl) ask(ctx context.Context, req Request) error       { return errUnimplemented }
func (e *impl) covered(req Request) bool                         { return false }
func (e *impl) decide(id string, approve bool) error             { return errUnimplemented }
func (e *impl) selectTab(conv ConversationID, tab TabID)         {}
func (e *impl) focusTab(tab TabID)                               {}
func (e *impl) takeOver(conv ConversationID) error               { return errUnimplemented }
func (e *impl) resume(conv ConversationID) error                 { return errUnimplemented }
func (e *impl) cancel(conv ConversationID) error                 { return errUnimplemented }
func (e *impl) paused(conv ConversationID) bool                  { return false }
func (e *impl) note(conv ConversationID, text string, warn bool) {}
func (e *impl) setInfo(info Info)                                {}
func (e *impl) snapshot() State                                  { return State{} }
func (e *impl) changes() (<-chan struct{}, func())               { return nil, func() {} }
func (e *impl) listen(fn func(Event)) func()                     { return func() {} }
func (e *impl) waitIdle(ctx context.Context) error               { return errUnimplemented }
func (o *opImpl) context() context.Context                       { return context.Background() }
func (o *opImpl) err() error                                     { return nil }
func (o *opImpl) bindTab(tab TabID)                              {}
func (o *opImpl) end()                                           {}
