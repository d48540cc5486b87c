package aimux

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const retryEnvelope = `{"kind":"aimux","code":14,"message":"Failed after 2 attempts. Last error: Cannot connect to API",
 "error":{"name":"AI_RetryError","reason":"maxRetriesExceeded","errors":[
   {"kind":"aimux","code":11,"message":"first","error":{"name":"AI_APICallError","statusCode":503,"isRetryable":true}},
   {"kind":"aimux","code":11,"message":"Cannot connect to API: All connection attempts failed",
    "error":{"name":"AI_APICallError","isRetryable":true,"responseHeaders":{"retry-after":"1"}},
    "cause":{"message":"All connection attempts failed","type":"httpx.ConnectError",
      "cause":{"message":"[Errno 111] Connection refused","type":"ConnectionRefusedError"}}}]},
 "retryable":true,"retryAfterMs":1500}`

func mustDecode(t *testing.T, envelope string) *Error {
	t.Helper()
	err := DecodeError([]byte(envelope))
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("DecodeError returned %T, want *Error", err)
	}
	return e
}

func TestDecodeRetryChain(t *testing.T) {
	root := mustDecode(t, retryEnvelope)
	if root.Kind != KindAimux || root.Code != CodeRetry || root.Name != "AI_RetryError" {
		t.Fatalf("root = %s %d %s", root.Kind, root.Code, root.Name)
	}
	if !root.Retryable || root.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("retryable %v retryAfter %v", root.Retryable, root.RetryAfter)
	}
	if !json.Valid(root.Raw) || !strings.HasPrefix(string(root.Raw), `{"kind":"aimux","code":14`) {
		t.Fatalf("Raw = %s", root.Raw)
	}
	if len(root.Attempts()) != 2 {
		t.Fatalf("attempts = %d", len(root.Attempts()))
	}
	// Retry: the native cause is the last attempt.
	last, ok := errors.Unwrap(root).(*Error)
	if !ok || last.Message != "Cannot connect to API: All connection attempts failed" {
		t.Fatalf("cause of retry = %#v", errors.Unwrap(root))
	}
	if last != root.Attempts()[1] {
		t.Fatal("the cause must be the same value as the last attempt")
	}
	if last.Retryable || last.RetryAfter != 0 {
		t.Fatal("retryable / retryAfterMs are root-only")
	}
	src, ok := errors.Unwrap(last).(*SourceError)
	if !ok || src.Type != "httpx.ConnectError" || !src.HasType() {
		t.Fatalf("next = %#v", errors.Unwrap(last))
	}
	osErr, ok := errors.Unwrap(src).(*SourceError)
	if !ok || osErr.Message != "[Errno 111] Connection refused" || osErr.Type != "ConnectionRefusedError" {
		t.Fatalf("os error = %#v", errors.Unwrap(src))
	}
	if errors.Unwrap(osErr) != nil {
		t.Fatal("chain must end at the OS error")
	}
	got := ChainLinks(root)
	if len(got) != 4 || got[0].Kind != "aimux" || got[3].Kind != "source" || *got[3].Name != "ConnectionRefusedError" {
		t.Fatalf("links = %+v", got)
	}
}

func TestErrorsAsAndIs(t *testing.T) {
	var err error = DecodeError([]byte(retryEnvelope))
	if !errors.Is(err, ErrRetry) || !errors.Is(err, ErrAPICall) {
		t.Fatal("errors.Is must find the Retry root and the APICall link")
	}
	if errors.Is(err, ErrTimeout) || errors.Is(err, ErrInvalidResponseData) {
		t.Fatal("errors.Is matched a variant that is not in the chain")
	}
	var apiErr *APICallError
	if !errors.As(err, &apiErr) {
		t.Fatal("errors.As(*APICallError) failed")
	}
	// errors.As walks from the root: the first APICall link is the last attempt.
	if apiErr.Message != "Cannot connect to API: All connection attempts failed" || apiErr.Code != CodeAPICall {
		t.Fatalf("apiErr = %q %d", apiErr.Message, apiErr.Code)
	}
	if apiErr.StatusCode != nil {
		t.Fatal("statusCode was not observed on the last attempt; it must stay nil")
	}
	if apiErr.IsRetryable == nil || !*apiErr.IsRetryable {
		t.Fatal("isRetryable not decoded")
	}
	if string(apiErr.ResponseHeaders) != `{"retry-after":"1"}` {
		t.Fatalf("responseHeaders = %s", apiErr.ResponseHeaders)
	}
	if apiErr.Node() != errors.Unwrap(err) {
		t.Fatal("Node() must be the decoded link")
	}
	// The view is an error and continues the chain.
	var src *SourceError
	if !errors.As(apiErr, &src) || src.Type != "httpx.ConnectError" {
		t.Fatal("the view must unwrap to the link's cause")
	}
	var retry *RetryError
	if !errors.As(err, &retry) || retry.Reason == nil || *retry.Reason != "maxRetriesExceeded" {
		t.Fatalf("RetryError view = %+v", retry)
	}
	var first *APICallError
	if !errors.As(retry.Attempts()[0], &first) || first.StatusCode == nil || *first.StatusCode != 503 {
		t.Fatal("attempt 0 statusCode")
	}
	var timeout *TimeoutError
	if errors.As(err, &timeout) {
		t.Fatal("errors.As found a TimeoutError that is not there")
	}
	if !errors.Is(apiErr, ErrAPICall) {
		t.Fatal("errors.Is on a view")
	}
}

func TestSharedCodeThree(t *testing.T) {
	tv := mustDecode(t, `{"kind":"aimux","code":3,"message":"bad","error":{"name":"AI_TypeValidationError","value":{"a":1}},"retryable":false}`)
	if !errors.Is(tv, ErrTypeValidation) || errors.Is(tv, ErrInvalidResponseData) {
		t.Fatal("code 3 must resolve by name first")
	}
	var v *TypeValidationError
	if !errors.As(tv, &v) || string(v.Value) != `{"a":1}` {
		t.Fatal("TypeValidationError view")
	}
	// No name: (kind, code) picks the code's first entry.
	noName := mustDecode(t, `{"kind":"aimux","code":3,"message":"bad","error":{},"retryable":false}`)
	if !errors.Is(noName, ErrInvalidResponseData) || noName.HasName() {
		t.Fatal("code 3 without a name")
	}
}

func TestUnknownKindsAndCodes(t *testing.T) {
	for _, env := range []string{
		`{"kind":"quantum","code":4242,"message":"from the future","error":{"name":"QuantumError","qubits":3},"retryable":false}`,
		`{"kind":"aimux","code":99,"message":"new aimux code","error":{"name":"AI_NewError"},"retryable":true}`,
		// A known code with an unknown name stays generic (like the Python decoder).
		`{"kind":"aimux","code":11,"message":"renamed","error":{"name":"AI_FutureAPICallError"},"retryable":false}`,
	} {
		e := mustDecode(t, env)
		if _, ok := e.Variant(); ok {
			t.Fatalf("%s resolved to a known variant", env)
		}
		if string(e.Raw) != env {
			t.Fatal("raw JSON must be kept")
		}
		if e.Name == "" || e.Message == "" || e.Code == 0 {
			t.Fatalf("generic fields lost: %+v", e)
		}
		var api *APICallError
		if errors.As(e, &api) || errors.Is(e, ErrAPICall) {
			t.Fatal("an unknown node must not match a variant")
		}
	}
	q := mustDecode(t, `{"kind":"quantum","code":4242,"message":"m","error":{"name":"QuantumError","qubits":3},"cause":{"kind":"aimux","code":12,"message":"t","error":{"name":"AI_TimeoutError","timeoutMs":50}},"retryable":false}`)
	var te *TimeoutError
	if !errors.As(q, &te) || te.TimeoutMs == nil || *te.TimeoutMs != 50 {
		t.Fatal("a known link below an unknown one must still be found")
	}
}

func TestOddShapes(t *testing.T) {
	// Retry with no attempts: no cause.
	r := mustDecode(t, `{"kind":"aimux","code":14,"message":"r","error":{"name":"AI_RetryError","reason":"errorNotRetryable","errors":[]},"retryable":false}`)
	if errors.Unwrap(r) != nil {
		t.Fatal("empty errors: no cause")
	}
	// Retry with an explicit cause: the cause wins.
	r = mustDecode(t, `{"kind":"aimux","code":14,"message":"r","error":{"name":"AI_RetryError","errors":[{"kind":"aimux","code":11,"message":"a","error":{"name":"AI_APICallError"}}]},"cause":{"message":"c"},"retryable":false}`)
	if s, ok := errors.Unwrap(r).(*SourceError); !ok || s.Message != "c" {
		t.Fatal("explicit cause must win over the last attempt")
	}
	// Nested retry: the inner retry's last attempt continues the chain.
	r = mustDecode(t, `{"kind":"aimux","code":14,"message":"outer","error":{"name":"AI_RetryError","errors":[{"kind":"aimux","code":14,"message":"inner","error":{"name":"AI_RetryError","errors":[{"kind":"aimux","code":11,"message":"deep","error":{"name":"AI_APICallError"}}]}}]},"retryable":false}`)
	links := ChainLinks(r)
	if len(links) != 3 || links[2].Message != "deep" {
		t.Fatalf("nested retry links = %+v", links)
	}
	// A cause that is not an object ends the chain; a missing error.name is a null name.
	n := mustDecode(t, `{"kind":"aimux","code":1,"message":"x","error":{"note":1},"cause":"just text","retryable":false}`)
	if errors.Unwrap(n) != nil || n.HasName() {
		t.Fatal("non-object cause / missing name")
	}
	if l := ChainLinks(n); l[0].Name != nil {
		t.Fatal("missing name must print null")
	}
	// Source node without type.
	s := mustDecode(t, `{"kind":"aimux","code":1,"message":"x","error":{"name":"AI_OtherError"},"cause":{"message":"plain"},"retryable":false}`)
	if src := errors.Unwrap(s).(*SourceError); src.HasType() || src.Type != "" {
		t.Fatal("source without type")
	}
	if l := ChainLinks(s); l[1].Name != nil || l[1].Kind != "source" || l[1].Code != 0 {
		t.Fatalf("source link = %+v", l[1])
	}
	// Truncation markers are kept.
	tr := mustDecode(t, `{"kind":"aimux","code":1,"message":"x…[truncated]","error":{"name":"AI_OtherError"},"retryable":false,"truncated":["message"]}`)
	if !reflect.DeepEqual(tr.Truncated, []string{"message"}) {
		t.Fatal("truncated not kept")
	}
	// A root whose code is not an integer: its known name supplies the code, like the core
	// (never a root with code 0).
	if e := mustDecode(t, `{"kind":"aimux","code":"11","message":"x","error":{"name":"AI_APICallError"}}`); e.Code != 11 {
		t.Fatalf("string code with a known name must decode as 11, got %d", e.Code)
	}
	// Not JSON / not an object: a binding error with the bytes kept.
	for _, bad := range []string{`not json`, `[1,2]`, `null`, ``} {
		e := mustDecode(t, bad)
		if e.Kind != KindBinding || e.Code != CodeInvalidWireJSON || string(e.Raw) != bad {
			t.Fatalf("%q -> %+v", bad, e)
		}
	}
	// Refused like every binding refuses them (202): a root without kind (a source node), a
	// root code beyond int32, a root code 0 without a known name.
	for _, bad := range []string{
		`{"message":"m","type":"OSError"}`,
		`{"kind":"aimux","code":4294967307,"message":"m","error":{"name":"AI_APICallError"}}`,
		`{"kind":"aimux","code":2147483648,"message":"m","error":{}}`,
		`{"kind":"aimux","code":0,"message":"m","error":{"name":"AI_Future"}}`,
	} {
		if _, rejected := ParseEnvelope([]byte(bad)); rejected == nil || rejected.Code != CodeInvalidWireJSON {
			t.Fatalf("%s: not refused", bad)
		}
		if e := mustDecode(t, bad); e.Code != CodeInvalidWireJSON || string(e.Raw) != bad {
			t.Fatalf("%s -> %+v", bad, e)
		}
	}
}

func TestDeepChainIsBounded(t *testing.T) {
	var b strings.Builder
	const depth = maxChainLinks + 20
	for i := 0; i < depth; i++ {
		b.WriteString(`{"kind":"aimux","code":1,"message":"n","error":{"name":"AI_OtherError"},"cause":`)
	}
	b.WriteString(`{"message":"bottom"}`)
	b.WriteString(strings.Repeat("}", depth))
	e := mustDecode(t, b.String())
	n := len(ChainLinks(e))
	if n != maxChainLinks {
		t.Fatalf("links = %d, want %d", n, maxChainLinks)
	}
}

func TestSentinelsAreDistinct(t *testing.T) {
	seen := map[error]bool{}
	for _, s := range []error{ErrRetry, ErrAPICall, ErrTypeValidation, ErrInvalidResponseData, ErrUnknownOp, ErrInvalidParams} {
		if seen[s] {
			t.Fatal("duplicate sentinel")
		}
		seen[s] = true
		if !strings.HasPrefix(s.Error(), "aimux: ") {
			t.Fatal(s.Error())
		}
	}
	if len(Variants()) != len(variants) {
		t.Fatal("Variants")
	}
}

func TestLocalErrorsRoundTrip(t *testing.T) {
	e := newLocalError(KindBinding, CodeRuntimeInit, "aimux: cannot load x")
	d := mustDecode(t, string(e.Raw))
	if d.Kind != e.Kind || d.Code != e.Code || d.Name != "RuntimeInitError" || d.Message != e.Message || !errors.Is(d, ErrRuntimeInit) {
		t.Fatalf("round trip: %s", e.Raw)
	}
	if !strings.HasPrefix(string(e.Raw), `{"kind":"binding","code":207,"message":`) {
		t.Fatalf("member order: %s", e.Raw)
	}
}
