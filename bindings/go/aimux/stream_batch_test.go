package aimux

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A stream reads batches (aimux_stream_next_batch) and hands out one event per Next: the same
// events, byte for byte and in order, as one aimux_stream_next per event, against the project's
// fault-injecting OpenAI-compatible server (tests/fault_server.py on 127.0.0.1). No duration is
// asserted: a test waits on what the server saw (GET /__wait).

// faultServer is tests/fault_server.py in a child process, stopped at the test's end.
type faultServer struct{ base string }

func newFaultServer(t testing.TB) *faultServer {
	t.Helper()
	python := os.Getenv("PYTHON")
	if python == "" {
		python = filepath.Join(repoRoot(t), ".venv", "bin", "python")
	}
	cmd := exec.Command(python, filepath.Join(repoRoot(t), "tests", "fault_server.py"), "--port", "0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("fault server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(`fault server on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("fault server did not start: %q %v", line, err)
	}
	return &faultServer{base: m[1]}
}

func (f *faultServer) params(spec string) map[string]any {
	return map[string]any{
		"model":      map[string]any{"provider": "openai", "modelId": "fault:" + spec, "baseURL": f.base + "/v1", "apiKey": "sk-test"},
		"prompt":     "hi",
		"maxRetries": 0,
	}
}

// saw waits (a 60 s safety bound, not a speed claim) until the server saw event for scenario.
func (f *faultServer) saw(t *testing.T, event, scenario string) {
	t.Helper()
	q := url.Values{"event": {event}, "scenario": {scenario}, "n": {"1"}, "timeout_ms": {"60000"}}
	c, err := net.Dial("tcp", strings.TrimPrefix(f.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /__wait?%s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", q.Encode())
	resp, _ := io.ReadAll(c)
	if !regexp.MustCompile(`^HTTP/1\.[01] 200 `).Match(resp) {
		t.Fatalf("the server did not see %s for %s: %s", event, scenario, resp)
	}
}

// trickyText is n one-character pieces full of what a batch splitter can trip on: , ] } " \ and
// a two-byte character (no ';' or '=': they separate the server's spec).
func trickyText(n int) string {
	pieces := []string{",", "]", "}", `"`, `\`, "[", "{", "a", "é"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(pieces[i%len(pieces)])
	}
	return b.String()
}

var dateHeader = regexp.MustCompile(`"date":"[^"]*"`)

// drain reads every event of a stream opened with at most batch events per crossing (0: one
// aimux_stream_next per event).
func drain(t *testing.T, params any, batch int) ([]string, error) {
	t.Helper()
	saved := streamBatchEvents
	streamBatchEvents = batch
	s, err := Stream(context.Background(), "stream_text", params)
	streamBatchEvents = saved
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	defer s.Close()
	if (s.batch > 0) != (batch > 0) {
		t.Fatalf("the stream reads %d events per crossing, not %d", s.batch, batch)
	}
	var events []string
	for s.Next() {
		// the response's Date header blanked: two requests a second apart differ there
		events = append(events, dateHeader.ReplaceAllString(string(s.Event()), `"date":""`))
	}
	if s.Next() {
		t.Fatal("Next after the end")
	}
	return events, s.Err()
}

func deltaTexts(t *testing.T, events []string) string {
	var b strings.Builder
	for _, ev := range events {
		var e struct{ Type, Text string }
		if err := json.Unmarshal([]byte(ev), &e); err != nil {
			t.Fatalf("%v: %s", err, ev)
		}
		if e.Type == "text-delta" {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// held is how many events s took from the library and has not handed out yet.
func held(s *EventStream) int {
	n := len(s.polled)
	for pos := s.pos; s.held != nil && pos < len(s.held); n++ {
		pos = eventEnd(s.held, pos) + 1
	}
	return n
}

func TestStreamBatchesManyEventsAsPerEventReads(t *testing.T) {
	f := newFaultServer(t)
	text := trickyText(1500)
	params := f.params("mode=ok;parts=1500;text=" + text)
	got, err := drain(t, params, 1024)
	if err != nil {
		t.Fatal(err)
	}
	want, err := drain(t, params, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1501 || len(want) != 1501 {
		t.Fatalf("%d / %d events, want 1,500 deltas and the finish", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d: batched %s, per event %s", i, got[i], want[i])
		}
	}
	if deltaTexts(t, got) != text {
		t.Fatal("the deltas do not make up the text the server sent")
	}
	if !strings.HasPrefix(got[1500], `{"type":"finish"`) {
		t.Fatalf("last event %s", got[1500])
	}
}

func TestStreamBatchesMoreThanOneBatchInOrder(t *testing.T) {
	// 5,000 deltas at once, 256 to a server write: batches of many events, more than one
	// crossing takes at most and more than the core's queue holds
	f := newFaultServer(t)
	s, err := Stream(context.Background(), "stream_text", f.params("mode=chunks;n=5000"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, mostHeld, last := 0, 0, ""
	for s.Next() {
		ev := string(s.Event())
		if strings.HasPrefix(ev, `{"type":"text-delta"`) {
			if want := fmt.Sprintf(`{"type":"text-delta","text":"w%d "}`, n); ev != want {
				t.Fatalf("event %s, want %s", ev, want)
			}
			n++
		}
		mostHeld = max(mostHeld, held(s))
		last = ev
	}
	if s.Err() != nil || n != 5000 || !strings.HasPrefix(last, `{"type":"finish"`) {
		t.Fatalf("%d deltas, last %s, err %v", n, last, s.Err())
	}
	if mostHeld == 0 || mostHeld >= streamBatchEvents {
		t.Fatalf("at most %d events held after a Next: want several per crossing, under %d", mostHeld, streamBatchEvents)
	}
}

func TestStreamBatchesErrorMidStreamAsPerEventReads(t *testing.T) {
	f := newFaultServer(t)
	params := f.params("mode=errframe;parts=1500;after=1200;text=" + trickyText(1500))
	got, gotErr := drain(t, params, 1024)
	want, wantErr := drain(t, params, 0)
	if len(got) != 1200 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%d events batched, %d per event, or they differ", len(got), len(want))
	}
	var a, b *APICallError
	if !errors.As(gotErr, &a) || !errors.As(wantErr, &b) {
		t.Fatalf("errors %T %v / %T %v", gotErr, gotErr, wantErr, wantErr)
	}
	// the same chain, node by node (the envelopes differ only in the response's Date header)
	var ca, cb []string
	for e := gotErr; e != nil; e = errors.Unwrap(e) {
		ca = append(ca, fmt.Sprintf("%T %s", e, e.Error()))
	}
	for e := wantErr; e != nil; e = errors.Unwrap(e) {
		cb = append(cb, fmt.Sprintf("%T %s", e, e.Error()))
	}
	if len(ca) == 0 || strings.Join(ca, "\n") != strings.Join(cb, "\n") {
		t.Fatalf("chains differ:\n%s\n--\n%s", strings.Join(ca, "\n"), strings.Join(cb, "\n"))
	}
}

// heldStream opens a stream whose server sent 600 deltas and stalls, and reads until the
// stream holds events it has not handed out (a batch of several).
func heldStream(t *testing.T, f *faultServer, ctx context.Context, spec string) *EventStream {
	t.Helper()
	s, err := Stream(ctx, "stream_text", f.params(spec))
	if err != nil {
		t.Fatal(err)
	}
	f.saw(t, "stall", spec) // all 600 deltas were sent
	for i := 0; held(s) == 0 && i < 600; i++ {
		if !s.Next() {
			t.Fatalf("the stream ended: %v", s.Err())
		}
	}
	if held(s) == 0 {
		t.Fatal("never more than one event per crossing")
	}
	return s
}

func TestStreamBatchesCloseMidBatch(t *testing.T) {
	f := newFaultServer(t)
	spec := "mode=stall;parts=600;after=600;stall_ms=60000;text=close" + strings.Repeat("c", 595)
	s := heldStream(t, f, context.Background(), spec)
	done := make(chan struct{})
	go func() { _ = s.Close(); close(done) }() // from another goroutine
	<-done
	if s.Next() || s.Err() != nil || s.Event() != nil {
		t.Fatalf("a held event after Close (err %v)", s.Err())
	}
	if held(s) != 0 {
		t.Fatal("held events kept after the end")
	}
	f.saw(t, "gone", spec) // the stream's connection was closed
}

func TestStreamBatchesContextEndMidBatch(t *testing.T) {
	f := newFaultServer(t)
	spec := "mode=stall;parts=600;after=600;stall_ms=60000;text=ctxend" + strings.Repeat("x", 594)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := heldStream(t, f, ctx, spec)
	defer s.Close()
	cancel()
	if s.Next() || !errors.Is(s.Err(), context.Canceled) {
		t.Fatalf("after the context's end: Next true or Err %v", s.Err())
	}
	f.saw(t, "gone", spec)
}

// TestStreamBatchesHeldBatchCountsAsReads: a consumer that keeps calling Next while it works
// through a held batch is a reader: the core's idle reaper (AIMUX_STREAM_IDLE_TIMEOUT_MS) must
// not close its stream, as it would not with one read per event. Runs in a child process (the
// limit is read once per process).
func TestStreamBatchesHeldBatchCountsAsReads(t *testing.T) {
	if os.Getenv("AIMUX_GO_HELPER") != "reaper" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStreamBatchesHeldBatchCountsAsReads$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "AIMUX_GO_HELPER=reaper", "AIMUX_STREAM_IDLE_TIMEOUT_MS=1500")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestStreamBatchesHeldBatchCountsAsReads") {
			t.Fatalf("helper process failed: %v\n%s", err, out)
		}
		return
	}
	// 40 deltas, then the server stalls; the consumer takes ~60 ms per event, so it holds a
	// batch longer than the 1,500 ms limit (it reads at once: the limit counts from the open,
	// and a first read after a wait here would be a real idle time)
	f := newFaultServer(t)
	spec := "mode=stall;parts=40;after=40;stall_ms=60000;text=reaper" + strings.Repeat("r", 34)
	s, err := Stream(context.Background(), "stream_text", f.params(spec))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mostHeld := 0
	for i := 0; i < 40; i++ {
		if !s.Next() {
			t.Fatalf("after %d deltas: %v", i, s.Err())
		}
		mostHeld = max(mostHeld, held(s))
		time.Sleep(60 * time.Millisecond) // the consumer's work
	}
	if mostHeld == 0 {
		t.Fatal("never more than one event per crossing")
	}
	// not reaped: a read now finds the stream open, waiting for the stalled server (a reaped
	// one answers the reaper's terminal error event)
	batch, ended, err := streamBatch(s.core.handle, 1, false)
	if batch != nil || ended || err != nil {
		t.Fatalf("reaped: %s ended=%v err=%v", batch, ended, err)
	}
}
