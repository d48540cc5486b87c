package aimux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The loop fixtures (contract-tests/calls/loops.json) through CallWithTools / StreamWithTools,
// each tool behaviour in Go's idiom. The replay matches every request body byte for byte, so a
// wrong answer to the model finds no recorded exchange (a 102).

const loopMissingFile = "/nonexistent/aimux/weather.json"

func loopTool(behaviour string) Tool {
	osloStarted := make(chan struct{})
	var once = make(chan struct{}, 1)
	once <- struct{}{}
	return func(ctx context.Context, input json.RawMessage) (any, error) {
		var in struct {
			City string `json:"city"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		switch behaviour {
		case "value":
			return "sunny in " + in.City, nil
		case "tool-error":
			return ToolResultError("no weather for " + in.City), nil
		case "tool-error-data":
			return ToolResultErrorWithData("no weather for "+in.City, map[string]string{"city": in.City}), nil
		case "raise-io":
			f, err := os.Open(loopMissingFile)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return "unreachable", nil
		case "raise":
			return nil, errors.New("weather service down")
		case "value-paired":
			if in.City == "Oslo" {
				select {
				case <-once:
					close(osloStarted)
				default:
				}
			} else {
				select {
				case <-osloStarted:
				case <-time.After(30 * time.Second):
					return nil, errors.New("the Oslo call never started: calls ran one by one")
				}
			}
			return "sunny in " + in.City, nil
		}
		return nil, fmt.Errorf("unknown behaviour %q", behaviour)
	}
}

type loopCase struct {
	callCase
	Tools map[string]string `json:"tools"`
}

func runLoopCase(t *testing.T, c loopCase, repo string) map[string]any {
	t.Helper()
	params := json.RawMessage(strings.ReplaceAll(string(c.Params), "@REPO@", repo))
	tools := Tools{}
	for name, b := range c.Tools {
		tools[name] = loopTool(b)
	}
	ctx := context.Background()
	asOutcome := func(err error) map[string]any {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("not an *aimux.Error: %T %v", err, err)
		}
		if c.Tools["weather"] == "raise-io" {
			// the very error os.Open returned, through the chain
			var pathErr *fs.PathError
			if !errors.As(err, &pathErr) || pathErr.Path != loopMissingFile {
				t.Errorf("the chain does not reach the *fs.PathError: %v", ChainLinks(err))
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("errors.Is(err, fs.ErrNotExist) is false")
			}
			var view *ToolExecutionError
			if !errors.As(err, &view) {
				t.Errorf("not a *ToolExecutionError: %T", err)
			}
		}
		return map[string]any{"error": map[string]any{"kind": e.Kind, "code": float64(e.Code), "name": e.Name}}
	}
	if c.API == "call" {
		res, err := CallWithTools(ctx, c.Op, params, tools)
		if err != nil {
			return asOutcome(err)
		}
		var v any
		if err := json.Unmarshal(res, &v); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"result": v}
	}
	s, err := StreamWithTools(ctx, c.Op, params, tools)
	if err != nil {
		return asOutcome(err)
	}
	defer s.Close()
	events := []any{}
	for s.Next() {
		var v any
		if err := json.Unmarshal(s.Event(), &v); err != nil {
			t.Fatal(err)
		}
		events = append(events, v)
	}
	if err := s.Err(); err != nil {
		return asOutcome(err)
	}
	return map[string]any{"events": events}
}

func TestLoopFixtures(t *testing.T) {
	repo := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(repo, "contract-tests", "calls", "loops.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []loopCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 14 {
		t.Fatalf("only %d loop cases", len(doc.Cases))
	}
	for _, c := range doc.Cases {
		t.Run(c.Key, func(t *testing.T) {
			var want any
			if err := json.Unmarshal(c.Expect, &want); err != nil {
				t.Fatal(err)
			}
			got := runLoopCase(t, c, repo)
			if !subset(want, got) {
				gotJSON, _ := json.Marshal(got)
				t.Errorf("%s\n want %s\n  got %s", c.Description, c.Expect, gotJSON)
			}
		})
	}
}
