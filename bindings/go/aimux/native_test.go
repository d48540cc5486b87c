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
	"time"
)

// These tests call the real libaimux ($AIMUX_LIB; TestMain sets it to native/build/libaimux.so).

func decodeJSON(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("result is not a JSON object: %v: %s", err, raw)
	}
	return m
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *aimux.Error, got %T: %v", err, err)
	}
	return e
}

func TestVersion(t *testing.T) {
	res, err := Call(context.Background(), "aimux.version", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJSON(t, res)
	if m["name"] != "aimux-ops" || m["version"] != ManifestVersion || m["abiVersion"] != float64(ABIVersion) {
		t.Fatalf("aimux.version = %s", res)
	}
	abi, err := ABI()
	if err != nil || abi != ABIVersion {
		t.Fatalf("ABI() = %d, %v", abi, err)
	}
}

func TestManifestMatchesSchema(t *testing.T) {
	res, err := Call(context.Background(), "aimux.manifest", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(repoRoot(t), "schema", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(file, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("aimux.manifest differs from schema/manifest.json")
	}
}

func TestParamsForms(t *testing.T) {
	for _, p := range []any{nil, map[string]any{}, struct{}{}, json.RawMessage(`{}`), []byte(`{}`), `{}`} {
		if _, err := Call(context.Background(), "aimux.version", p); err != nil {
			t.Fatalf("params %T: %v", p, err)
		}
	}
}

func TestUnknownOp(t *testing.T) {
	_, err := Call(context.Background(), "no.such.op", nil)
	e := asError(t, err)
	if e.Kind != KindProtocol || e.Code != CodeUnknownOp || e.Name != "UnknownOpError" || e.Retryable {
		t.Fatalf("unknown op -> %s %d %s", e.Kind, e.Code, e.Name)
	}
	if !errors.Is(err, ErrUnknownOp) || errors.Is(err, ErrInvalidParams) {
		t.Fatal("errors.Is")
	}
	var u *UnknownOpError
	if !errors.As(err, &u) || u.Op == nil || *u.Op != "no.such.op" {
		t.Fatalf("UnknownOpError view: %+v", u)
	}
	if !strings.Contains(string(u.AvailableOps), "aimux.version") {
		t.Fatalf("availableOps = %s", u.AvailableOps)
	}
	if !json.Valid(e.Raw) || !strings.Contains(string(e.Raw), `"code":300`) {
		t.Fatalf("raw = %s", e.Raw)
	}
}

func TestInvalidParams(t *testing.T) {
	_, err := Call(context.Background(), "aimux.version", map[string]any{"bogus": 1})
	e := asError(t, err)
	if e.Code != CodeInvalidParams || e.Kind != KindProtocol {
		t.Fatalf("-> %d %s", e.Code, e.Kind)
	}
	var ip *InvalidParamsError
	if !errors.As(err, &ip) || ip.Op == nil || *ip.Op != "aimux.version" || !strings.Contains(string(ip.Violations), "bogus") {
		t.Fatalf("InvalidParamsError view: %+v", ip)
	}
	// The validation library's exception is a source node below it.
	var src *SourceError
	if !errors.As(err, &src) || src.Message == "" {
		t.Fatal("no source node below the 301")
	}
}

func TestBindingErrors(t *testing.T) {
	ctx := context.Background()
	// Not JSON: the library says so.
	_, err := Call(ctx, "aimux.version", "{not json")
	if e := asError(t, err); e.Kind != KindBinding && e.Kind != KindProtocol {
		t.Fatalf("non-JSON params -> %s %d", e.Kind, e.Code)
	}
	// Invalid UTF-8 in the op name: 201 from the library.
	_, err = Call(ctx, "aimux.\xff\xfe", nil)
	if e := asError(t, err); e.Code != CodeInvalidUTF8 || !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("invalid UTF-8 op -> %d %s", e.Code, e.Message)
	}
	// A NUL byte cannot cross the C boundary: refused before the call, as an unknown op (300,
	// as in every binding; it was a 201 here, issue 13).
	_, err = Call(ctx, "aimux.version\x00x", nil)
	if e := asError(t, err); e.Kind != KindProtocol || e.Code != CodeUnknownOp || e.Name != "UnknownOpError" {
		t.Fatalf("NUL op -> %s %d %s", e.Kind, e.Code, e.Name)
	}
	_, err = Call(ctx, "aimux.version", json.RawMessage("{\"a\":\"\x00\"}"))
	if e := asError(t, err); e.Code != CodeInvalidWireJSON {
		t.Fatalf("NUL params -> %d", e.Code)
	}
	// Params Go cannot encode.
	_, err = Call(ctx, "aimux.version", map[string]any{"f": func() {}})
	if e := asError(t, err); e.Code != CodeInvalidWireJSON {
		t.Fatalf("unencodable params -> %d", e.Code)
	}
	// Wrong mode: a call op through Stream.
	_, err = Stream(ctx, "aimux.version", nil)
	if e := asError(t, err); e.Code != CodeWrongMode || !errors.Is(err, ErrWrongMode) {
		t.Fatalf("call op as stream -> %d %s", e.Code, e.Message)
	}
}

func TestCallWithEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Call(ctx, "aimux.version", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx -> %v", err)
	}
	if _, err := Stream(ctx, "stream_text", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx -> %v", err)
	}
	// A live context with a deadline goes through the goroutine path.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Call(ctx, "aimux.version", nil); err != nil {
		t.Fatal(err)
	}
}
