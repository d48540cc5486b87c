// The Go consumer of dist-tests/steps/70-go.sh: `app <recording.jsonl>`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/aimux-ops/aimux-ops/bindings/go/aimux"
)

func main() {
	ctx := context.Background()
	model := map[string]any{"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1"}
	res, err := aimux.Call(ctx, "generate_text", map[string]any{"model": model, "prompt": "Say hello in one word.",
		"recording": map[string]any{"mode": "replay", "path": os.Args[1]}})
	if err != nil {
		var e *aimux.Error
		if errors.As(err, &e) {
			fmt.Printf("error: %d %s: %s\n", e.Code, e.Name, e.Message)
		} else {
			fmt.Printf("error: %v\n", err)
		}
		os.Exit(3)
	}
	var r struct{ Text string }
	if err := json.Unmarshal(res, &r); err != nil {
		panic(err)
	}
	fmt.Printf("text: %s\n", r.Text)
	s, err := aimux.Stream(ctx, "stream_text", map[string]any{"model": model, "prompt": "Say hello in one word.",
		"recording": map[string]any{"mode": "replay", "path": os.Args[1]}})
	if err != nil {
		fmt.Printf("stream error: %v\n", err)
		os.Exit(3)
	}
	text, last := "", "none"
	for s.Next() {
		var ev struct{ Type, Text string }
		if err := json.Unmarshal(s.Event(), &ev); err != nil {
			panic(err)
		}
		text += ev.Text
		last = ev.Type
	}
	if err := s.Err(); err != nil {
		fmt.Printf("stream error: %v\n", err)
	}
	s.Close()
	fmt.Printf("stream: %s (%s)\n", text, last)
	failing := map[string]any{"model": map[string]any{"provider": "openai", "modelId": "gpt-4o-mini",
		"baseURL": "http://127.0.0.1:1/v1", "apiKey": "sk-test"}, "prompt": "hi", "maxRetries": 1,
		"retry": map[string]any{"initialDelayMs": 10}}
	_, err = aimux.Call(ctx, "generate_text", failing)
	if err == nil {
		fmt.Println("the failing call succeeded")
	}
	for ; err != nil; err = errors.Unwrap(err) {
		switch e := err.(type) {
		case *aimux.Error:
			fmt.Printf("chain: %s %d %s: %s\n", e.Kind, e.Code, e.Name, e.Message)
		case *aimux.SourceError:
			fmt.Printf("chain: source 0 %s: %s\n", e.Type, e.Message)
		default:
			fmt.Printf("chain: ? %T: %v\n", err, err)
		}
	}
}
