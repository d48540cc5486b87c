package aimux

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// End-to-end: the shipped recording (recordings/demo.jsonl, replayed by the core), the failing
// call of recordings/README.md, and a real OpenAI-compatible HTTP server (fakeOpenAI) that the
// core talks to over loopback.

func demoParams(t *testing.T) map[string]any {
	t.Helper()
	path := filepath.Join(repoRoot(t), "recordings", "demo.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the shipped recording is missing: %v", err)
	}
	return map[string]any{
		"model":     map[string]any{"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1"},
		"prompt":    "Say hello in one word.",
		"recording": map[string]any{"mode": "replay", "path": path},
	}
}

var failingParams = json.RawMessage(`{"model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1", "apiKey": "sk-test"},
 "prompt": "hi", "maxRetries": 1, "retry": {"initialDelayMs": 10}}`)

type generateResult struct {
	Text         string `json:"text"`
	FinishReason string `json:"finishReason"`
	Usage        struct {
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
		TotalTokens  int `json:"totalTokens"`
	} `json:"usage"`
	ToolCalls []json.RawMessage `json:"toolCalls"`
	Response  struct {
		ID      string `json:"id"`
		ModelID string `json:"modelId"`
	} `json:"response"`
}

func checkDemoResult(t testing.TB, res json.RawMessage) {
	var r generateResult
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result: %v: %s", err, res)
	}
	if r.Text != "Hello!" || r.FinishReason != "stop" || r.Usage.InputTokens != 12 || r.Usage.OutputTokens != 2 ||
		r.Usage.TotalTokens != 14 || r.ToolCalls == nil || len(r.ToolCalls) != 0 ||
		r.Response.ID != "chatcmpl-demo-1" || r.Response.ModelID != "gpt-4o-mini" {
		t.Fatalf("generate_text on the recording = %s", res)
	}
}

func TestGenerateTextReplay(t *testing.T) {
	res, err := Call(context.Background(), "generate_text", demoParams(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	checkDemoResult(t, res)
}

func rawOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return string(e.Raw)
	}
	return ""
}

func TestStreamTextReplay(t *testing.T) {
	s, err := Stream(context.Background(), "stream_text", demoParams(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	defer s.Close()
	var types, texts []string
	var finish map[string]any
	for s.Next() {
		var ev map[string]any
		if err := json.Unmarshal(s.Event(), &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, fmt.Sprint(ev["type"]))
		if ev["type"] == "text-delta" {
			texts = append(texts, fmt.Sprint(ev["text"]))
		}
		if ev["type"] == "finish" {
			finish = ev
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	if strings.Join(types, ",") != "text-delta,text-delta,finish" || strings.Join(texts, "|") != "Hel|lo!" {
		t.Fatalf("events %v %v", types, texts)
	}
	if finish["finishReason"] != "stop" {
		t.Fatalf("finish = %v", finish)
	}
	if s.Next() || s.Event() != nil {
		t.Fatal("Next after the end")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // twice is fine
		t.Fatal(err)
	}
}

func TestWrongModeStreamOpThroughCall(t *testing.T) {
	_, err := Call(context.Background(), "stream_text", demoParams(t))
	if e := asError(t, err); e.Code != CodeWrongMode {
		t.Fatalf("stream op through Call -> %d %s", e.Code, e.Message)
	}
	var wm *WrongModeError
	if !errors.As(err, &wm) || wm.Expected == nil || *wm.Expected != "stream" {
		t.Fatalf("WrongModeError view %+v", wm)
	}
	// The message names this package's functions, not the C ABI's; the envelope is the core's.
	e := asError(t, err)
	if want := "op 'stream_text' is a stream op; use aimux.Stream (typed: aimux.StreamText)"; e.Message != want {
		t.Fatalf("message %q, want %q", e.Message, want)
	}
	if e.Kind != KindProtocol || e.Name != "WrongModeError" || !strings.Contains(string(e.Raw), "use aimux_stream") {
		t.Fatalf("kind %q name %q envelope %s", e.Kind, e.Name, e.Raw)
	}
}

func TestWrongModeCallOpThroughStream(t *testing.T) {
	_, err := Stream(context.Background(), "aimux.version", nil)
	e := asError(t, err)
	want := "op 'aimux.version' is a call op; use aimux.Call (typed: aimux.GenerateText, aimux.GenerateObject)"
	if e.Code != CodeWrongMode || e.Message != want {
		t.Fatalf("call op through Stream -> %d %q, want %q", e.Code, e.Message, want)
	}
}

// TestFailingCallChain: the failing call of recordings/README.md; its native chain, walked with
// errors.Unwrap, reaches the OS error.
func TestFailingCallChain(t *testing.T) {
	_, err := Call(context.Background(), "generate_text", failingParams)
	if err == nil {
		t.Fatal("the call to a closed port succeeded")
	}
	root := asError(t, err)
	if root.Code != CodeRetry || root.Name != "AI_RetryError" || !errors.Is(err, ErrRetry) {
		t.Fatalf("root = %d %s: %s", root.Code, root.Name, root.Raw)
	}
	var retry *RetryError
	if !errors.As(err, &retry) || retry.Reason == nil || *retry.Reason != "maxRetriesExceeded" || len(retry.Attempts()) != 2 {
		t.Fatalf("retry view: %s", root.Raw)
	}
	var chain []string
	var last error
	for e := error(root); e != nil; e = errors.Unwrap(e) {
		chain = append(chain, fmt.Sprintf("%T %q", e, e.Error()))
		last = e
		if msg := e.Error(); strings.Contains(msg, "http://") || strings.Contains(msg, "127.0.0.1:1") {
			t.Errorf("a message carries the URL: %q", msg)
		}
	}
	t.Logf("chain:\n  %s", strings.Join(chain, "\n  "))
	osErr, ok := last.(*SourceError)
	if !ok || !strings.Contains(osErr.Message, "Connection refused") {
		t.Fatalf("the chain ends at %T %v, not at the OS error", last, last)
	}
	// The link right below the retry is the last attempt, an APICallError.
	var apiErr *APICallError
	if !errors.As(err, &apiErr) || apiErr.Node() != errors.Unwrap(root) {
		t.Fatal("errors.As(*APICallError) must find the last attempt")
	}
	if !strings.HasPrefix(apiErr.Message, "Cannot connect to API") || apiErr.StatusCode != nil {
		t.Fatalf("apiErr = %q status %v", apiErr.Message, apiErr.StatusCode)
	}
	if apiErr.IsRetryable == nil || !*apiErr.IsRetryable {
		t.Fatal("a connection failure is retryable")
	}
	var src *SourceError
	if !errors.As(apiErr, &src) {
		t.Fatal("no source node below the APICallError")
	}
	if strings.Contains(string(root.Raw), "sk-test") {
		t.Fatal("the API key leaked into the envelope")
	}
	if !root.Retryable {
		t.Fatal("root retryable")
	}
}

// fakeOpenAI is a real HTTP/1.1 server on loopback speaking the OpenAI chat-completions
// protocol (a small one on net, so that the race build need not compile net/http). The first
// path segment picks the behaviour: baseURL = URL + "/<mode>/v1". With a barrier of N, an "ok"
// request is answered only once N of them are open at once: calls that do not overlap get a 409
// "barrier not reached" after a safety bound (no test measures a duration).
type fakeOpenAI struct {
	URL     string
	ln      net.Listener
	barrier int
	release chan struct{} // closed at cleanup: handlers that hang return
	mu      sync.Mutex
	conns   map[net.Conn]bool
	waiting int           // requests at the barrier now
	open    chan struct{} // closed when the barrier is reached
}

// await waits at the barrier: how many requests were in flight together, and whether all were.
func (f *fakeOpenAI) await() (int, bool) {
	f.mu.Lock()
	if f.open == nil {
		f.open = make(chan struct{})
	}
	ch := f.open
	f.waiting++
	if f.waiting == f.barrier {
		close(ch)
		f.open, f.waiting = nil, 0
		f.mu.Unlock()
		return f.barrier, true
	}
	f.mu.Unlock()
	select {
	case <-ch:
		return f.barrier, true
	case <-f.release:
	case <-time.After(60 * time.Second):
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-ch:
		return f.barrier, true
	default:
	}
	together := f.waiting
	f.waiting--
	return together, false
}

func newFakeOpenAI(t *testing.T, barrier int) *fakeOpenAI {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeOpenAI{URL: "http://" + ln.Addr().String(), ln: ln, barrier: barrier,
		release: make(chan struct{}), conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns[c] = true
			f.mu.Unlock()
			go f.serve(c)
		}
	}()
	t.Cleanup(func() {
		close(f.release)
		_ = ln.Close()
		f.mu.Lock()
		for c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
	})
	return f
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"

func sseChunk(text string) string {
	return fmt.Sprintf("data: {\"id\":\"chatcmpl-go\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", text)
}

func jsonResponse(status string, extraHeaders, body string) string {
	return fmt.Sprintf("HTTP/1.1 %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
		status, extraHeaders, len(body), body)
}

// serve answers requests on one connection (keep-alive for JSON answers; a stream closes it).
func (f *fakeOpenAI) serve(c net.Conn) {
	defer func() {
		_ = c.Close()
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		parts := strings.Fields(line)
		if len(parts) < 2 {
			return
		}
		length := 0
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			h = strings.TrimRight(h, "\r\n")
			if h == "" {
				break
			}
			if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "content-length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if _, err := io.ReadFull(br, make([]byte, length)); err != nil {
			return
		}
		// hang waits until the client goes away or the test ends.
		hang := func() {
			gone := make(chan struct{})
			go func() { _, _ = br.ReadByte(); close(gone) }()
			select {
			case <-gone:
			case <-f.release:
			}
		}
		mode := strings.Split(strings.TrimPrefix(parts[1], "/"), "/")[0]
		switch mode {
		case "ok":
			if f.barrier > 0 {
				if together, all := f.await(); !all {
					_, _ = io.WriteString(c, jsonResponse("409 Conflict", "", fmt.Sprintf(
						`{"error":{"message":"barrier not reached: %d of %d calls in flight together","type":"invalid_request_error"}}`,
						together, f.barrier)))
					continue
				}
			}
			_, err = io.WriteString(c, jsonResponse("200 OK", "", `{"id":"chatcmpl-go","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi from Go"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`))
			if err != nil {
				return
			}
			continue
		case "ratelimit":
			_, err = io.WriteString(c, jsonResponse("429 Too Many Requests", "retry-after-ms: 1500\r\n",
				`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
			if err != nil {
				return
			}
			continue
		case "hang-headers": // never answers until the client goes away
			hang()
		case "stream-hang": // one delta, then nothing
			_, _ = io.WriteString(c, sseHead+sseChunk("Hel"))
			hang()
		case "stream-error": // one delta, then an error frame with a status
			_, _ = io.WriteString(c, sseHead+sseChunk("Hel")+
				"data: {\"error\":{\"message\":\"The server is overloaded\",\"code\":503}}\n\n")
		case "stream-cut": // ends without [DONE]
			_, _ = io.WriteString(c, sseHead+sseChunk("Hel"))
		default:
			_, _ = io.WriteString(c, jsonResponse("404 Not Found", "Connection: close\r\n", `{"error":"not found"}`))
		}
		return
	}
}

func (f *fakeOpenAI) params(mode string, extra map[string]any) map[string]any {
	p := map[string]any{
		"model":      map[string]any{"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": f.URL + "/" + mode + "/v1", "apiKey": "sk-test"},
		"prompt":     "hi",
		"maxRetries": 0,
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func TestGenerateTextOverHTTP(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	res, err := Call(context.Background(), "generate_text", f.params("ok", nil))
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	var r generateResult
	if err := json.Unmarshal(res, &r); err != nil || r.Text != "Hi from Go" || r.Usage.TotalTokens != 6 {
		t.Fatalf("result %s (%v)", res, err)
	}
}

func TestRateLimitedCall(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	_, err := Call(context.Background(), "generate_text", f.params("ratelimit", nil))
	root := asError(t, err)
	// maxRetries 0: the APICallError comes back unwrapped.
	var apiErr *APICallError
	if !errors.As(err, &apiErr) || apiErr.Node() != root || errors.Is(err, ErrRetry) {
		t.Fatalf("want an unwrapped APICallError, got %s", root.Raw)
	}
	if apiErr.StatusCode == nil || *apiErr.StatusCode != 429 {
		t.Fatalf("statusCode: %s", root.Raw)
	}
	if !root.Retryable || root.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("retryable %v retryAfter %v: %s", root.Retryable, root.RetryAfter, root.Raw)
	}
	if apiErr.ResponseBody == nil || !strings.Contains(*apiErr.ResponseBody, "Rate limit reached") {
		t.Fatalf("responseBody: %s", root.Raw)
	}
}

// Test32Goroutines: 32 goroutines calling at once, on the recording and over HTTP. The HTTP
// calls overlap: the server answers none of them until all 32 are in flight at once.
func Test32Goroutines(t *testing.T) {
	const n = 32
	params := demoParams(t)
	f := newFakeOpenAI(t, n)
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate // all 32 start together
			res, err := Call(context.Background(), "generate_text", params)
			if err != nil {
				errs <- fmt.Errorf("replay %d: %w", i, err)
				return
			}
			var r generateResult
			if json.Unmarshal(res, &r) != nil || r.Text != "Hello!" {
				errs <- fmt.Errorf("replay %d: %s", i, res)
			}
			res, err = Call(context.Background(), "generate_text", f.params("ok", nil))
			if err != nil {
				errs <- fmt.Errorf("http %d: %w", i, err)
				return
			}
			if json.Unmarshal(res, &r) != nil || r.Text != "Hi from Go" {
				errs <- fmt.Errorf("http %d: %s", i, res)
			}
			if _, err := Call(context.Background(), "no.such.op", nil); !errors.Is(err, ErrUnknownOp) {
				errs <- fmt.Errorf("unknown op %d: %v", i, err)
			}
		}(i)
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err) // a call that did not overlap the others: "barrier not reached"
	}
}

func TestStreamCancelByContext(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Stream(ctx, "stream_text", f.params("stream-hang", nil))
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	defer s.Close()
	if !s.Next() {
		t.Fatalf("no first event: %v", s.Err())
	}
	if !strings.Contains(string(s.Event()), `"Hel"`) {
		t.Fatalf("first event %s", s.Event())
	}
	// The server now sends nothing: Next blocks until ctx is cancelled.
	var cancelled atomic.Bool
	time.AfterFunc(200*time.Millisecond, func() { cancelled.Store(true); cancel() })
	if nextWithin(t, s, time.Minute) { // a bound for a broken run, not a speed claim
		t.Fatalf("event after cancel: %s", s.Event())
	}
	if !cancelled.Load() {
		t.Fatal("Next returned before the cancellation")
	}
	if !errors.Is(s.Err(), context.Canceled) {
		t.Fatalf("Err = %v", s.Err())
	}
	if s.Next() {
		t.Fatal("Next after cancellation")
	}
}

// nextWithin runs s.Next, failing the test when it stays blocked longer than d (the server
// only lets go of a hanging stream at cleanup).
func nextWithin(t *testing.T, s *EventStream, d time.Duration) bool {
	t.Helper()
	ch := make(chan bool, 1)
	go func() { ch <- s.Next() }()
	select {
	case ok := <-ch:
		return ok
	case <-time.After(d):
		t.Fatalf("Next still blocked after %v", d)
		return false
	}
}

func TestStreamCloseFromAnotherGoroutine(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	s, err := Stream(context.Background(), "stream_text", f.params("stream-hang", nil))
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	if !s.Next() {
		t.Fatalf("no first event: %v", s.Err())
	}
	time.AfterFunc(200*time.Millisecond, func() { _ = s.Close() })
	if nextWithin(t, s, time.Minute) { // a bound for a broken run, not a speed claim
		t.Fatal("event after Close")
	}
	if s.Err() != nil {
		t.Fatalf("Close is not an error: %v", s.Err())
	}
}

func TestStreamStartCancelled(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// the server never answers: only the context's end can end this
	err := within(t, func() error {
		s, err := Stream(ctx, "stream_text", f.params("hang-headers", nil))
		if err == nil {
			// The core may hand out the handle before the response starts: then Next waits.
			defer s.Close()
			if s.Next() {
				return fmt.Errorf("event from a server that sent nothing: %s", s.Event())
			}
			err = s.Err()
		}
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	for _, tc := range []struct {
		mode   string
		status int64
	}{{"stream-error", 503}, {"stream-cut", 200}} {
		t.Run(tc.mode, func(t *testing.T) {
			s, err := Stream(context.Background(), "stream_text", f.params(tc.mode, nil))
			if err != nil {
				t.Fatalf("%v\n%s", err, rawOf(err))
			}
			defer s.Close()
			var n int
			for s.Next() {
				n++
			}
			if n != 1 {
				t.Fatalf("%d events before the error", n)
			}
			var apiErr *APICallError
			if !errors.As(s.Err(), &apiErr) {
				t.Fatalf("Err = %T %v", s.Err(), s.Err())
			}
			if apiErr.StatusCode == nil || *apiErr.StatusCode != tc.status {
				t.Fatalf("status in the stream error: %s", apiErr.Raw)
			}
		})
	}
}

func TestStreamCancelAfterFinishIsNotAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Stream(ctx, "stream_text", demoParams(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	defer s.Close()
	var last string
	for last != "finish" && s.Next() {
		var ev struct{ Type string }
		_ = json.Unmarshal(s.Event(), &ev)
		last = ev.Type
	}
	if last != "finish" {
		t.Fatalf("no finish event: %v", s.Err())
	}
	cancel()
	if s.Next() || s.Err() != nil {
		t.Fatalf("after finish + cancel: %v", s.Err())
	}
}

func TestStreamClosedBeforeReading(t *testing.T) {
	s, err := Stream(context.Background(), "stream_text", demoParams(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Next() || s.Err() != nil || s.Event() != nil {
		t.Fatalf("Next after Close: %v", s.Err())
	}
}

// TestCallAbandonedOnContextEnd: a call stuck on a server that never answers returns
// ctx.Err() when the context ends; the native call finishes (and is freed) in the background
// once the server lets go (z_ownership_test checks the freeing).
func TestCallAbandonedOnContextEnd(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// the server never answers: only the context's end can end this
	err := within(t, func() error {
		_, err := Call(ctx, "generate_text", f.params("hang-headers", nil))
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

// within runs fn, failing the test when it has not returned after a minute: a safety bound (the
// server lets go of a hanging request only at cleanup), not a speed claim.
func within(t *testing.T, fn func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(time.Minute):
		t.Fatal("still blocked after a minute: the context's end did not end it")
		return nil
	}
}
