package aimux

import (
	"context"
	"encoding/json"
	"fmt"
)

// The agent of recordings/agent.jsonl (native/examples/agent.c in Go): its tool fails once at
// tool level (a file that is not there), the model reads that and tries another path.
func ExampleCallWithTools() {
	notes := map[string]string{"notes/todo.txt": "buy milk; call Ada"}
	tools := Tools{"read_file": func(ctx context.Context, input json.RawMessage) (any, error) {
		var in struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err // a framework error: the call fails, the model never sees it
		}
		text, ok := notes[in.Path]
		if !ok {
			return ToolResultError("file not found: " + in.Path), nil // the model reads it
		}
		return text, nil
	}}
	params := map[string]any{
		"model":  map[string]any{"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1"},
		"prompt": "What is on my todo list?",
		"tools": map[string]any{"read_file": map[string]any{
			"description": "Read a text file of the user's notes.",
			"inputSchema": map[string]any{
				"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}},
				"required": []string{"path"},
			},
		}},
		"stopWhen":  map[string]any{"stepCount": 5},
		"recording": map[string]any{"mode": "replay", "path": "../../../recordings/agent.jsonl"},
	}
	res, err := CallWithTools(context.Background(), "generate_text", params, tools)
	if err != nil {
		fmt.Println(err)
		return
	}
	var result struct {
		Text  string
		Steps []struct {
			FinishReason string
			ToolErrors   []struct{ Error struct{ Message string } }
		}
	}
	_ = json.Unmarshal(res, &result)
	for i, s := range result.Steps {
		fmt.Println("step", i+1, s.FinishReason, len(s.ToolErrors), "tool errors")
	}
	fmt.Println(result.Steps[0].ToolErrors[0].Error.Message)
	fmt.Println(result.Text)
	// Output:
	// step 1 tool-calls 1 tool errors
	// step 2 tool-calls 0 tool errors
	// step 3 stop 0 tool errors
	// file not found: notes/missing.txt
	// Your todo list: buy milk, and call Ada.
}
