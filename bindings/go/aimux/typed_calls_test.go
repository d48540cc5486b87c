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

// The shared call fixtures (contract-tests/calls/cases.json and loops.json) through the typed
// API: each case's params decoded into the generated params type (which must send them back
// unchanged: absent, null and unknown members alike), the typed function called, and its typed
// result or events encoded again for the comparison. A case the typed API cannot express (an op
// with no typed function, an op in the other mode, params as JSON text: what the typed functions
// rule out by their types) runs through the raw API, Call / Stream, its reason logged.

type typedRun struct{ typed, untyped int }

// untypedReason says why the typed API cannot express c ("" when it can).
func untypedReason(c callCase) string {
	switch {
	case c.ParamsText != nil || len(c.Params) == 0 || c.Params[0] != '{':
		return "params as JSON text: Call takes a string"
	case c.API == "call" && (c.Op == "aimux.version" || c.Op == "aimux.manifest" ||
		c.Op == "generate_text" || c.Op == "generate_object"):
		return ""
	case c.API == "stream" && c.Op == "stream_text":
		return ""
	case c.Op == "stream_text" || c.Op == "generate_text":
		return "an op in the other mode: the typed function chooses the mode"
	}
	return "an op with no typed function: Call / Stream name it"
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

// typedParams decodes the case's params into P and checks they encode back as given.
func typedParams[P any](t *testing.T, raw []byte) P {
	t.Helper()
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("params do not decode into %T: %v", p, err)
	}
	again, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, raw, again) {
		t.Fatalf("%T does not send its params back as given:\n  in  %s\n  out %s", p, raw, again)
	}
	return p
}

func asValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func outcomeOf(t *testing.T, err error) map[string]any {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not an *aimux.Error: %T %v", err, err)
	}
	return map[string]any{"error": map[string]any{"kind": e.Kind, "code": float64(e.Code), "name": e.Name}}
}

// runTyped runs one case through the typed API; ok is false when the typed API cannot express it.
func runTyped(t *testing.T, c callCase, repo string, tools Tools) (outcome map[string]any, ok bool) {
	t.Helper()
	if untypedReason(c) != "" {
		return nil, false
	}
	raw := []byte(strings.ReplaceAll(string(c.Params), "@REPO@", repo))
	ctx := context.Background()
	var opts []Option
	if tools != nil {
		opts = append(opts, WithTools(tools))
	}
	switch {
	case c.Op == "aimux.version":
		res, err := Version(ctx, typedParams[VersionParams](t, raw))
		if err != nil {
			return outcomeOf(t, err), true
		}
		return map[string]any{"result": asValue(t, res)}, true
	case c.Op == "aimux.manifest":
		res, err := Manifest(ctx, typedParams[ManifestParams](t, raw))
		if err != nil {
			return outcomeOf(t, err), true
		}
		return map[string]any{"result": asValue(t, res)}, true
	case c.API == "call" && c.Op == "generate_text":
		res, err := GenerateText(ctx, typedParams[GenerateTextParams](t, raw), opts...)
		if err != nil {
			return outcomeOf(t, err), true
		}
		return map[string]any{"result": asValue(t, res)}, true
	case c.API == "call" && c.Op == "generate_object":
		res, err := GenerateObject(ctx, typedParams[GenerateObjectParams](t, raw), opts...)
		if err != nil {
			return outcomeOf(t, err), true
		}
		return map[string]any{"result": asValue(t, res)}, true
	case c.API == "stream" && c.Op == "stream_text":
		s, err := StreamText(ctx, typedParams[StreamTextParams](t, raw), opts...)
		if err != nil {
			return outcomeOf(t, err), true
		}
		defer s.Close()
		events := []any{}
		for ev := range s.All() {
			if ev.AsAny() == nil {
				t.Errorf("an event this version should know decoded as none: %s", ev.RawJSON())
			}
			events = append(events, asValue(t, ev))
		}
		if err := s.Err(); err != nil {
			return outcomeOf(t, err), true
		}
		return map[string]any{"events": events}, true
	}
	return nil, false
}

func checkTyped(t *testing.T, c callCase, repo string, tools Tools, counts *typedRun) {
	var want any
	if err := json.Unmarshal(c.Expect, &want); err != nil {
		t.Fatal(err)
	}
	got, ok := runTyped(t, c, repo, tools)
	if ok {
		counts.typed++
	} else {
		counts.untyped++
		t.Logf("%s: through Call / Stream (%s)", c.Key, untypedReason(c))
		got = runCase(t, c, repo)
	}
	if !subset(want, got) {
		gotJSON, _ := json.Marshal(got)
		t.Errorf("%s\n want %s\n  got %s", c.Description, c.Expect, gotJSON)
	}
}

func TestCallFixturesTyped(t *testing.T) {
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
	var counts typedRun
	for _, c := range doc.Cases {
		t.Run(c.Key, func(t *testing.T) { checkTyped(t, c, repo, nil, &counts) })
	}
	t.Logf("%d cases through the typed API, %d through Call / Stream", counts.typed, counts.untyped)
	if counts.typed < 8 || counts.typed+counts.untyped != len(doc.Cases) {
		t.Fatalf("%d of %d cases ran through the typed API, %d through Call / Stream",
			counts.typed, len(doc.Cases), counts.untyped)
	}
}

func TestLoopFixturesTyped(t *testing.T) {
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
	var counts typedRun
	for _, c := range doc.Cases {
		t.Run(c.Key, func(t *testing.T) {
			tools := Tools{}
			for name, b := range c.Tools {
				tools[name] = loopTool(b)
			}
			checkTyped(t, c.callCase, repo, tools, &counts)
		})
	}
	if counts.untyped != 0 || counts.typed != len(doc.Cases) {
		t.Fatalf("%d of %d loop cases ran through the typed API", counts.typed, len(doc.Cases))
	}
}

// The meta ops typed: Version's and Manifest's results are the core's answers, whole (what the
// generated types do not know is kept and sent again).
func TestMetaOpsTyped(t *testing.T) {
	ctx := context.Background()
	v, err := Version(ctx, VersionParams{})
	if err != nil {
		t.Fatal(err)
	}
	if v.AbiVersion != ABIVersion || v.Version != ManifestVersion || v.Name.Value() != "aimux-ops" {
		t.Fatalf("Version = %+v", v)
	}
	m, err := Manifest(ctx, ManifestParams{})
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(repoRoot(t), "schema", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, file, again) {
		t.Fatal("Manifest() does not encode back as schema/manifest.json")
	}
	names := []string{}
	for _, op := range m.Ops {
		names = append(names, op.Name)
	}
	if !reflect.DeepEqual(names, []string{"aimux.manifest", "aimux.version", "generate_object", "generate_text", "stream_text"}) {
		t.Fatalf("Manifest().Ops = %v", names)
	}
	if _, err := Version(ctx, VersionParams{ExtraFields: map[string]json.RawMessage{"unexpected": json.RawMessage("1")}}); err == nil {
		t.Fatal("Version with a member the op refuses: no error")
	} else if e := (*Error)(nil); !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Fatalf("Version with a member the op refuses: %v", err)
	}
}
