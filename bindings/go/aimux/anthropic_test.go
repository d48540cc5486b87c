package aimux

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The second provider from Go: recordings/anthropic.jsonl (the Messages API exchange recorded by
// `make recordings`) replayed by the core with no key and no network.
func TestAnthropicRecordingReplay(t *testing.T) {
	path := filepath.Join(repoRoot(t), "recordings", "anthropic.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the shipped recording is missing: %v", err)
	}
	params := map[string]any{
		"model":     map[string]any{"provider": "anthropic", "modelId": "claude-sonnet-4-5", "baseURL": "http://127.0.0.1:1/v1"},
		"prompt":    "Say hello in one word.",
		"recording": map[string]any{"mode": "replay", "path": path},
	}
	res, err := Call(context.Background(), "generate_text", params)
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	var r generateResult
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result: %v: %s", err, res)
	}
	if r.Text != "Hello!" || r.FinishReason != "stop" || r.Usage.TotalTokens != 14 ||
		r.Response.ID != "msg_01QC4g3HwBThD4BaNtBckFDJ" || r.Response.ModelID != "claude-sonnet-4-5" {
		t.Fatalf("generate_text on the anthropic recording = %s", res)
	}
	s, err := Stream(context.Background(), "stream_text", params)
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	defer s.Close()
	text, last := "", ""
	for s.Next() {
		var ev map[string]any
		if err := json.Unmarshal(s.Event(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev["type"] == "text-delta" {
			text += ev["text"].(string)
		}
		last = ev["type"].(string) + ":" + func() string { f, _ := ev["finishReason"].(string); return f }()
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	if text != "Hello!" || last != "finish:stop" {
		t.Fatalf("stream_text on the anthropic recording: text %q, last %q", text, last)
	}
}
