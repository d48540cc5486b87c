package aimux

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Host tools (CONTRACT §2.2, seed 001's three layers): Tool functions run on goroutines of this
// process, one per call (a step's calls run concurrently), and are answered through
// aimux_stream_tool_result. The core asks (a tool-call event), the host answers; no callback
// crosses the C ABI. What a Tool returns decides the layer:
//
//   - a value and a nil error → {"output": value}: a tool-result, the model reads it;
//   - ToolResultError(msg) / ToolResultErrorWithData(msg, data) → a tool-error the model reads
//     and may recover from;
//   - a non-nil error → {"failure": <cause node of the error and its errors.Unwrap chain>}: the
//     model never sees it; the caller gets the decoded AI_ToolExecutionError (code 22) whose
//     Unwrap chain reaches that very error (errors.As / errors.Is find it). With
//     "toolFailures": "to-model" in the params its message goes to the model instead.

var toolCallType = []byte(`"tool-call"`)

// Tool is a host tool's execute function. ctx is cancelled when the stream is (its ctx, Close,
// or the end of the stream); input is the call's input JSON.
type Tool func(ctx context.Context, input json.RawMessage) (any, error)

// Tools maps a tool name to its Tool; the params' tools.<name> is marked "execute": true.
type Tools map[string]Tool

// maxFailureDepth bounds the failure node's chain (the core keeps at most 16 nodes).
const maxFailureDepth = 16

// ToolResult is a tool-level error a Tool returns as its value: the model sees it (a returned
// error is a framework error instead).
type ToolResult struct {
	Message string
	Data    any
	HasData bool
}

// ToolResultError is a tool-level error with a message.
func ToolResultError(message string) *ToolResult { return &ToolResult{Message: message} }

// ToolResultErrorWithData is a tool-level error with a message and data (any JSON value).
func ToolResultErrorWithData(message string, data any) *ToolResult {
	return &ToolResult{Message: message, Data: data, HasData: true}
}

// answer is the answer JSON of a ToolResult.
func (r *ToolResult) answer() ([]byte, error) {
	if r.HasData {
		return json.Marshal(struct {
			Error struct {
				Message string `json:"message"`
				Data    any    `json:"data"`
			} `json:"error"`
		}{Error: struct {
			Message string `json:"message"`
			Data    any    `json:"data"`
		}{r.Message, r.Data}})
	}
	return json.Marshal(map[string]map[string]string{"error": {"message": r.Message}})
}

// failureNode is a cause node ({message, type, cause?}) of err and its errors.Unwrap chain (a
// joined error follows its first).
type failureNode struct {
	Message string       `json:"message"`
	Type    string       `json:"type"`
	Cause   *failureNode `json:"cause,omitempty"`
}

func failureOf(err error) *failureNode {
	root := &failureNode{Message: err.Error(), Type: fmt.Sprintf("%T", err)}
	node := root
	for depth := 1; depth < maxFailureDepth; depth++ {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if list := u.Unwrap(); len(list) > 0 {
				next = list[0]
			}
		}
		if next == nil {
			break
		}
		node.Cause = &failureNode{Message: next.Error(), Type: fmt.Sprintf("%T", next)}
		node, err = node.Cause, next
	}
	return root
}

// withTools marks the tools of params that tools names as the host's ("execute": true).
func withTools(params any, tools Tools) (json.RawMessage, error) {
	text, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &top); err != nil || top == nil {
		return nil, newLocalError(KindBinding, CodeInvalidWireJSON, "aimux: params with tools must be a JSON object")
	}
	specs := map[string]map[string]json.RawMessage{}
	if raw, ok := top["tools"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &specs); err != nil {
			return nil, newLocalError(KindBinding, CodeInvalidWireJSON, "aimux: params.tools must be an object of tool objects")
		}
	}
	for name := range tools {
		if specs[name] == nil {
			specs[name] = map[string]json.RawMessage{}
		}
		specs[name]["execute"] = json.RawMessage("true")
	}
	b, err := json.Marshal(specs)
	if err != nil {
		return nil, newLocalError(KindBinding, CodeInvalidWireJSON, "aimux: params.tools: "+err.Error())
	}
	top["tools"] = b
	out, err := json.Marshal(top)
	if err != nil {
		return nil, newLocalError(KindBinding, CodeInvalidWireJSON, "aimux: params: "+err.Error())
	}
	return out, nil
}

// toolHost runs one stream's host tool calls and keeps the error each returned.
type toolHost struct {
	tools  Tools
	handle uint64
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	raised map[string]error
}

type toolCallEvent struct {
	Type       string          `json:"type"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Input      json.RawMessage `json:"input"`
	Invalid    bool            `json:"invalid"`
}

// start runs the call of a tool-call event on its own goroutine when it is a host tool's.
func (h *toolHost) start(ev toolCallEvent) {
	fn, ok := h.tools[ev.ToolName]
	if !ok || fn == nil || ev.Invalid {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		answer := h.run(fn, ev)
		if h.ctx.Err() != nil {
			return // the stream takes no more answers
		}
		// an answer the stream no longer takes (cancelled, freed) is nobody's: dropped
		_ = streamToolResult(h.handle, ev.ToolCallID, string(answer))
	}()
}

// run calls fn and returns its answer JSON; a panic is a failure too.
func (h *toolHost) run(fn Tool, ev toolCallEvent) (answer []byte) {
	fail := func(err error) []byte {
		h.mu.Lock()
		h.raised[ev.ToolCallID] = err
		h.mu.Unlock()
		b, _ := json.Marshal(map[string]any{"failure": failureOf(err)})
		return b
	}
	defer func() {
		if p := recover(); p != nil {
			err, ok := p.(error)
			if !ok {
				err = fmt.Errorf("panic: %v", p)
			}
			answer = fail(err)
		}
	}()
	input := ev.Input
	if input == nil {
		input = json.RawMessage("null")
	}
	value, err := fn(h.ctx, input)
	if err != nil {
		return fail(err)
	}
	var b []byte
	if r, ok := value.(*ToolResult); ok && r != nil {
		b, err = r.answer()
	} else {
		b, err = json.Marshal(map[string]any{"output": value})
	}
	if err != nil {
		return fail(fmt.Errorf("aimux: the tool's value cannot be encoded as JSON: %w", err))
	}
	return b
}

// native gives a tool's failure (code 22) the very error the Tool returned as its cause.
func (h *toolHost) native(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeToolExecution {
		return err
	}
	var payload struct {
		ToolCallID string `json:"toolCallId"`
	}
	if json.Unmarshal(e.Payload, &payload) != nil {
		return err
	}
	h.mu.Lock()
	original, ok := h.raised[payload.ToolCallID]
	h.mu.Unlock()
	if ok {
		e.cause = original
	}
	return err
}

// ToolStream is an EventStream whose host tools run as their tool-call events come (Next starts
// them); Err is a tool failure's error with its own chain. Close (or the end) cancels every
// running Tool's ctx.
type ToolStream struct {
	*EventStream
	host *toolHost
}

// StreamWithTools starts a streaming op ("stream_text") with host tools: each tool-call event of
// a tool in tools, as Next hands it out, runs that Tool on a goroutine and its outcome is
// answered to the stream. Cancelling ctx cancels the stream and every running Tool.
func StreamWithTools(ctx context.Context, op string, params any, tools Tools) (*ToolStream, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := withTools(params, tools)
	if err != nil {
		return nil, err
	}
	s, err := Stream(ctx, op, p)
	if err != nil {
		return nil, err
	}
	toolCtx, cancel := context.WithCancel(ctx)
	host := &toolHost{tools: tools, handle: s.core.handle, ctx: toolCtx, cancel: cancel, raised: map[string]error{}}
	return &ToolStream{EventStream: s, host: host}, nil
}

// Next waits for the next event and starts a host tool's call; false at the end, after an error
// event (see Err), a cancellation or Close: every running Tool's ctx is then cancelled.
func (s *ToolStream) Next() bool {
	if !s.EventStream.Next() {
		s.host.cancel()
		return false
	}
	if bytes.Contains(s.Event(), toolCallType) { // most events are not: no parse for them
		var ev toolCallEvent
		if json.Unmarshal(s.Event(), &ev) == nil && ev.Type == "tool-call" {
			s.host.start(ev)
		}
	}
	return true
}

// Err is the stream's error; a tool's failure is AI_ToolExecutionError whose Unwrap chain
// reaches the very error its Tool returned.
func (s *ToolStream) Err() error {
	if err := s.EventStream.Err(); err != nil {
		return s.host.native(err)
	}
	return nil
}

// Close cancels every running Tool and closes the stream.
func (s *ToolStream) Close() error {
	s.host.cancel()
	return s.EventStream.Close()
}

// Wait returns once every Tool started has returned (after Close, they see ctx cancelled).
func (s *ToolStream) Wait() { s.host.wg.Wait() }

type loopCall struct {
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Input      json.RawMessage `json:"input"`
}

type loopToolResult struct {
	loopCall
	Output json.RawMessage `json:"output"`
}

type loopToolError struct {
	loopCall
	Error json.RawMessage `json:"error"`
}

type loopStep struct {
	Text         string           `json:"text"`
	ToolCalls    []loopCall       `json:"toolCalls"`
	ToolResults  []loopToolResult `json:"toolResults"`
	ToolErrors   []loopToolError  `json:"toolErrors"`
	FinishReason json.RawMessage  `json:"finishReason"`
	Usage        json.RawMessage  `json:"usage"`
	Response     json.RawMessage  `json:"response"`
}

type loopResult struct {
	Text         string           `json:"text"`
	FinishReason json.RawMessage  `json:"finishReason"`
	Usage        json.RawMessage  `json:"usage"`
	ToolCalls    []loopCall       `json:"toolCalls"`
	ToolResults  []loopToolResult `json:"toolResults"`
	Response     json.RawMessage  `json:"response"`
	Steps        []loopStep       `json:"steps"`
}

func newLoopStep() loopStep {
	return loopStep{ToolCalls: []loopCall{}, ToolResults: []loopToolResult{}, ToolErrors: []loopToolError{}}
}

// CallWithTools runs generate_text with host tools: the loop streamed (stream_text), its result
// JSON put together as the AI SDK's generateText gives it (text, toolCalls and toolResults of
// the last step, every step, usage summed). A Tool's returned error fails it with the decoded
// AI_ToolExecutionError whose Unwrap chain reaches that very error.
func CallWithTools(ctx context.Context, op string, params any, tools Tools) (json.RawMessage, error) {
	if op != "generate_text" {
		return nil, newLocalError(KindOfCode(CodeUnsupportedFunctionality), CodeUnsupportedFunctionality,
			"aimux: host tools run with generate_text or stream_text, not "+op)
	}
	s, err := StreamWithTools(ctx, "stream_text", params, tools)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var steps []loopStep
	step := newLoopStep()
	for s.Next() {
		var ev struct {
			Type         string          `json:"type"`
			Text         string          `json:"text"`
			ToolCallID   string          `json:"toolCallId"`
			ToolName     string          `json:"toolName"`
			Input        json.RawMessage `json:"input"`
			Output       json.RawMessage `json:"output"`
			Error        json.RawMessage `json:"error"`
			FinishReason json.RawMessage `json:"finishReason"`
			Usage        json.RawMessage `json:"usage"`
			Response     json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(s.Event(), &ev); err != nil {
			return nil, newLocalError(KindBinding, CodeInternal, "aimux: an event that is not JSON: "+err.Error())
		}
		call := loopCall{ev.ToolCallID, ev.ToolName, ev.Input}
		switch ev.Type {
		case "text-delta":
			step.Text += ev.Text
		case "tool-call":
			step.ToolCalls = append(step.ToolCalls, call)
		case "tool-result":
			step.ToolResults = append(step.ToolResults, loopToolResult{call, ev.Output})
		case "tool-error":
			step.ToolErrors = append(step.ToolErrors, loopToolError{call, ev.Error})
		case "finish-step":
			step.FinishReason, step.Usage, step.Response = ev.FinishReason, ev.Usage, ev.Response
			steps = append(steps, step)
			step = newLoopStep()
		case "finish":
			last := newLoopStep()
			if len(steps) > 0 {
				last = steps[len(steps)-1]
			}
			return json.Marshal(loopResult{
				Text: last.Text, FinishReason: ev.FinishReason, Usage: ev.Usage,
				ToolCalls: last.ToolCalls, ToolResults: last.ToolResults, Response: ev.Response,
				Steps: steps,
			})
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return nil, newLocalError(KindOfCode(CodeAborted), CodeAborted, "aimux: the call ended before its finish event")
}
