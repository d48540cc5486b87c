package aimux

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The call-level shared fixtures (contract-tests/calls/cases.json) through this package's
// public API, Call / Stream (DESIGN.md "Call-level fixtures"). Params go in as the resolved
// JSON value (json.RawMessage); paramsText as a string, which Call takes as JSON text.

type callCase struct {
	Key         string          `json:"key"`
	Description string          `json:"description"`
	API         string          `json:"api"`
	Op          string          `json:"op"`
	Params      json.RawMessage `json:"params"`
	ParamsText  *string         `json:"paramsText"`
	Expect      json.RawMessage `json:"expect"`
}

// subset reports want ⊆ got: objects member by member, arrays and scalars exactly.
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok || !subset(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

func runCase(t *testing.T, c callCase, repo string) map[string]any {
	t.Helper()
	var params any
	if c.ParamsText != nil {
		params = *c.ParamsText
	} else {
		params = json.RawMessage(strings.ReplaceAll(string(c.Params), "@REPO@", repo))
	}
	ctx := context.Background()
	asOutcome := func(err error) map[string]any {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("not an *aimux.Error: %T %v", err, err)
		}
		return map[string]any{"error": map[string]any{"kind": e.Kind, "code": float64(e.Code), "name": e.Name}}
	}
	if c.API == "call" {
		res, err := Call(ctx, c.Op, params)
		if err != nil {
			return asOutcome(err)
		}
		var v any
		if err := json.Unmarshal(res, &v); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"result": v}
	}
	s, err := Stream(ctx, c.Op, params)
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

func TestCallFixtures(t *testing.T) {
	repo := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(repo, "contract-tests", "calls", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []callCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 10 {
		t.Fatalf("only %d call cases", len(doc.Cases))
	}
	for _, c := range doc.Cases {
		t.Run(c.Key, func(t *testing.T) {
			var want any
			if err := json.Unmarshal(c.Expect, &want); err != nil {
				t.Fatal(err)
			}
			got := runCase(t, c, repo)
			if !subset(want, got) {
				gotJSON, _ := json.Marshal(got)
				t.Errorf("%s\n want %s\n  got %s", c.Description, c.Expect, gotJSON)
			}
		})
	}
}
