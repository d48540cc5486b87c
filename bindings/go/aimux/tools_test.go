package aimux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Host tools in Go's idiom against a local HTTP server speaking OpenAI's streamed Chat
// Completions: every answer is one call of `weather`; what it was asked is counted.

func toolCallServer(t *testing.T) (*httptest.Server, *atomic.Int32, map[string]any) {
	t.Helper()
	var requests atomic.Int32
	frames := []string{
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		requests.Add(1)
		w.Header().Set("content-type", "text/event-stream")
		for _, f := range frames {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	params := map[string]any{
		"model":  map[string]any{"provider": "openai", "modelId": "m", "baseURL": srv.URL + "/v1", "apiKey": "k"},
		"prompt": "What is the weather?",
		"tools": map[string]any{"weather": map[string]any{
			"description": "The weather in a city.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		}},
		"stopWhen":   map[string]any{"stepCount": 5},
		"maxRetries": 0,
	}
	return srv, &requests, params
}

// blockingTool runs until its ctx is cancelled; started and cancelled are closed as it goes.
func blockingTool(started, cancelled chan struct{}) Tool {
	return func(ctx context.Context, input json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return "too late", nil // an answer to a cancelled stream: dropped
	}
}

func TestToolCtxIsCancelledWhenTheStreamIsClosed(t *testing.T) {
	_, requests, params := toolCallServer(t)
	started, cancelled := make(chan struct{}), make(chan struct{})
	s, err := StreamWithTools(context.Background(), "stream_text", params, Tools{"weather": blockingTool(started, cancelled)})
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
		var ev struct{ Type string }
		_ = json.Unmarshal(s.Event(), &ev)
		if ev.Type == "tool-call" {
			break
		}
	}
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-cancelled // the running Tool saw its cancellation
	s.Wait()
	if s.Next() {
		t.Fatal("an event after Close")
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
}

func TestCancellingTheCallersCtxCancelsTheRunningTool(t *testing.T) {
	_, requests, params := toolCallServer(t)
	started, cancelled := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-started; cancel() }()
	_, err := CallWithTools(ctx, "generate_text", params, Tools{"weather": blockingTool(started, cancelled)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	<-cancelled
	if n := requests.Load(); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
}

type quotaError struct{ path string }

func (e *quotaError) Error() string { return "disk quota exceeded on " + e.path }

func TestAReturnedErrorReachesTheCallerWithItsOwnChain(t *testing.T) {
	_, requests, params := toolCallServer(t)
	root := &quotaError{path: "/var/forecast"}
	returned := fmt.Errorf("cannot save the forecast: %w", root)
	_, err := CallWithTools(context.Background(), "generate_text", params, Tools{
		"weather": func(ctx context.Context, input json.RawMessage) (any, error) { return nil, returned },
	})
	var view *ToolExecutionError
	if !errors.As(err, &view) {
		t.Fatalf("not a *ToolExecutionError: %T %v", err, err)
	}
	if view.ToolName == nil || *view.ToolName != "weather" || view.ToolCallID == nil || *view.ToolCallID != "t1" {
		t.Errorf("fields: %+v", view)
	}
	var got *quotaError
	if !errors.As(err, &got) || got != root {
		t.Fatalf("the chain does not reach the very error: %v", ChainLinks(err))
	}
	if !errors.Is(err, returned) {
		t.Fatal("errors.Is(err, returned) is false")
	}
	if !strings.Contains(err.Error(), "cannot save the forecast") {
		t.Errorf("message: %q", err.Error())
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("the model saw it: asked %d times", n)
	}
}

func TestAPanickingToolIsAFailure(t *testing.T) {
	_, _, params := toolCallServer(t)
	_, err := CallWithTools(context.Background(), "generate_text", params, Tools{
		"weather": func(ctx context.Context, input json.RawMessage) (any, error) { panic("boom") },
	})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeToolExecution || !strings.Contains(e.Message, "panic: boom") {
		t.Fatalf("got %v", err)
	}
}

func TestFailureNodeFollowsTheUnwrapChain(t *testing.T) {
	err := fmt.Errorf("outer: %w", errors.Join(&quotaError{"/x"}, errors.New("second")))
	b, _ := json.Marshal(failureOf(err))
	want := `{"message":"outer: disk quota exceeded on /x\nsecond","type":"*fmt.wrapError","cause":` +
		`{"message":"disk quota exceeded on /x\nsecond","type":"*errors.joinError","cause":` +
		`{"message":"disk quota exceeded on /x","type":"*aimux.quotaError"}}}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
	a, _ := ToolResultErrorWithData("no city", map[string]int{"n": 1}).answer()
	if string(a) != `{"error":{"message":"no city","data":{"n":1}}}` {
		t.Fatalf("got %s", a)
	}
}

func TestHostToolsOnlyWithGenerateText(t *testing.T) {
	_, err := CallWithTools(context.Background(), "generate_object", map[string]any{}, Tools{})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnsupportedFunctionality {
		t.Fatalf("got %v", err)
	}
}
