package aimux

// The typed ops (CONTRACT §4.1): GenerateText, StreamText and GenerateObject, and the meta ops
// Version and Manifest, over Call and Stream, with the params, results and events generated
// from the core's models (zz_types.go). What a typed function cannot say stays on Call and
// Stream, the raw API: an op this version has no function for (a newer core's), params as JSON
// text, or an op run in the other mode (the typed functions choose the mode for you).

import (
	"context"
	"encoding/json"
	"iter"
)

// Option is a setting of a typed op call.
type Option func(*callOptions)

type callOptions struct {
	tools Tools
}

// WithTools runs the named tools in this program (the core asks, the host answers, §2.2): each
// call of one runs its Tool on a goroutine; a ToolSpec in the params (description, input
// schema) describes it to the model.
func WithTools(tools Tools) Option { return func(o *callOptions) { o.tools = tools } }

func optionsOf(opts []Option) callOptions {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// decodeResult reads an op's result JSON into its generated type.
func decodeResult[T any](op string, raw json.RawMessage, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, newLocalError(KindBinding, CodeInternal, "aimux: the "+op+" result does not decode: "+err.Error())
	}
	return out, nil
}

// Version runs aimux.version: the core's name, version and C ABI version.
func Version(ctx context.Context, params VersionParams) (*VersionResult, error) {
	raw, err := Call(ctx, "aimux.version", params)
	return decodeResult[VersionResult]("aimux.version", raw, err)
}

// Manifest runs aimux.manifest: every op with its params, result and event schemas, and every
// error code (schema/manifest.json of the core's version).
func Manifest(ctx context.Context, params ManifestParams) (*ManifestResult, error) {
	raw, err := Call(ctx, "aimux.manifest", params)
	return decodeResult[ManifestResult]("aimux.manifest", raw, err)
}

// GenerateText runs generate_text: the text of one model call, or with WithTools the whole
// loop (Steps has every model call).
func GenerateText(ctx context.Context, params GenerateTextParams, opts ...Option) (*GenerateTextResult, error) {
	o := optionsOf(opts)
	if len(o.tools) > 0 {
		raw, err := CallWithTools(ctx, "generate_text", params, o.tools)
		return decodeResult[GenerateTextResult]("generate_text", raw, err)
	}
	raw, err := Call(ctx, "generate_text", params)
	return decodeResult[GenerateTextResult]("generate_text", raw, err)
}

// GenerateObject runs generate_object: a JSON value matching params.Schema (Object holds it).
func GenerateObject(ctx context.Context, params GenerateObjectParams, opts ...Option) (*GenerateObjectResult, error) {
	if len(optionsOf(opts).tools) > 0 {
		return nil, newLocalError(KindOfCode(CodeUnsupportedFunctionality), CodeUnsupportedFunctionality,
			"aimux: host tools run with GenerateText or StreamText, not GenerateObject")
	}
	raw, err := Call(ctx, "generate_object", params)
	return decodeResult[GenerateObjectResult]("generate_object", raw, err)
}

// TextStream is a stream_text stream of typed events:
//
//	for s.Next() { switch ev := s.Current().AsAny().(type) { case *aimux.TextDeltaEvent: … } }
//	if err := s.Err(); err != nil { … }
//
// or `for ev := range s.All()`. An error event ends it: Next returns false and Err is that
// decoded error. Close (idempotent, any goroutine) cancels and frees it.
type TextStream struct {
	next    func() bool
	event   func() json.RawMessage
	err     func() error
	close   func() error
	wait    func()
	current StreamTextEvent
	bad     error
}

// StreamText starts stream_text. Cancelling ctx cancels the stream (and every running Tool).
func StreamText(ctx context.Context, params StreamTextParams, opts ...Option) (*TextStream, error) {
	o := optionsOf(opts)
	if len(o.tools) > 0 {
		s, err := StreamWithTools(ctx, "stream_text", params, o.tools)
		if err != nil {
			return nil, err
		}
		return &TextStream{next: s.Next, event: s.Event, err: s.Err, close: s.Close, wait: s.Wait}, nil
	}
	s, err := Stream(ctx, "stream_text", params)
	if err != nil {
		return nil, err
	}
	return &TextStream{next: s.Next, event: s.Event, err: s.Err, close: s.Close, wait: func() {}}, nil
}

// Next waits for the next event; false at the end, after an error event or a cancellation
// (see Err).
func (s *TextStream) Next() bool {
	if s.bad != nil || !s.next() {
		return false
	}
	s.current = StreamTextEvent{}
	if err := json.Unmarshal(s.event(), &s.current); err != nil {
		s.bad = newLocalError(KindBinding, CodeInternal, "aimux: a stream_text event does not decode: "+err.Error())
		_ = s.close()
		return false
	}
	return true
}

// Current is the event Next moved to: its AsAny() is a *TextDeltaEvent, *FinishEvent, …, or nil
// for an event type this version does not know (RawJSON has it).
func (s *TextStream) Current() StreamTextEvent { return s.current }

// All iterates the events (Err tells why it ended).
func (s *TextStream) All() iter.Seq[StreamTextEvent] {
	return func(yield func(StreamTextEvent) bool) {
		for s.Next() {
			if !yield(s.current) {
				return
			}
		}
	}
}

// Err is the stream's error: nil after a finish event, the decoded *Error of an error event,
// ctx.Err() after a cancellation.
func (s *TextStream) Err() error {
	if s.bad != nil {
		return s.bad
	}
	return s.err()
}

// Close cancels the stream (and every running Tool) and frees it.
func (s *TextStream) Close() error { return s.close() }

// Wait returns once every Tool the stream started has returned (after Close, they see their
// ctx cancelled).
func (s *TextStream) Wait() { s.wait() }

// TextMessage is a message of role with text content.
func TextMessage(role MessageRole, text string) Message {
	return Message{Role: role, Content: Some(MessageContent{OfString: &text})}
}

// UserMessage is a user message with text content.
func UserMessage(text string) Message { return TextMessage(MessageRoleUser, text) }

// SystemMessage is a system message.
func SystemMessage(text string) Message { return TextMessage(MessageRoleSystem, text) }

// AssistantMessage is an assistant message with text content.
func AssistantMessage(text string) Message { return TextMessage(MessageRoleAssistant, text) }

// PartsMessage is a message of role with content parts (text, file, reasoning, tool calls and
// results).
func PartsMessage(role MessageRole, parts ...ContentPart) Message {
	return Message{Role: role, Content: Some(MessageContent{OfContentPartArray: parts})}
}
