package aimux_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aimux-ops/aimux-ops/bindings/go/aimux"
)

// The failing call of recordings/README.md: walk the native chain, find the API call error.
func ExampleCall_errors() {
	_, err := aimux.Call(context.Background(), "generate_text", map[string]any{
		"model":  map[string]any{"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1", "apiKey": "sk-test"},
		"prompt": "hi", "maxRetries": 1, "retry": map[string]any{"initialDelayMs": 10},
	})
	for e := err; e != nil; e = errors.Unwrap(e) {
		fmt.Println(e)
	}
	var apiErr *aimux.APICallError
	if errors.As(err, &apiErr) && errors.Is(err, aimux.ErrRetry) {
		fmt.Println("retried; last attempt:", apiErr.Message, apiErr.StatusCode == nil)
	}
}

func ExampleStream() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // cancelling ctx cancels the stream
	s, err := aimux.Stream(ctx, "stream_text", map[string]any{
		"model":     map[string]any{"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1"},
		"prompt":    "Say hello in one word.",
		"recording": map[string]any{"mode": "replay", "path": "../../../recordings/demo.jsonl"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for s.Next() {
		fmt.Println(string(s.Event()))
	}
	if err := s.Err(); err != nil {
		fmt.Println(err)
	}
}
