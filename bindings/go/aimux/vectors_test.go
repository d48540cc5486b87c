package aimux

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// repoRoot is the checkout this package lives in (bindings/go/aimux/../../..).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

type vector struct {
	Description  string          `json:"description"`
	Envelope     json.RawMessage `json:"envelope"`
	EnvelopeText *string         `json:"envelopeText"`
	Chain        json.RawMessage `json:"chain"`
	Root         *struct {
		Retryable    bool   `json:"retryable"`
		RetryAfterMs *int64 `json:"retryAfterMs"`
	} `json:"root"`
	Rejected int `json:"rejected"`
}

// wire is the envelope as the vector runner sends it (its exact text when the vector has one).
func (v vector) wire() []byte {
	if v.EnvelopeText != nil {
		return []byte(*v.EnvelopeText)
	}
	return v.Envelope
}

func loadVectors(t *testing.T) map[string]vector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "contract-tests", "vectors", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no contract vectors found in contract-tests/vectors/")
	}
	out := map[string]vector{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var vs []vector
		if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
			err = json.Unmarshal(data, &vs)
		} else {
			var v vector
			err = json.Unmarshal(data, &v)
			vs = []vector{v}
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, v := range vs {
			if len(v.Envelope) == 0 || (v.Rejected == 0 && (len(v.Chain) == 0 || v.Root == nil)) {
				t.Fatalf("%s[%d]: no envelope, or neither chain and root nor rejected", f, i)
			}
			name := filepath.Base(f)
			if len(vs) > 1 {
				name += "#" + string(rune('0'+i))
			}
			out[name] = v
		}
	}
	return out
}

// TestContractVectors decodes every vector's envelope and walks the chain with errors.Unwrap.
func TestContractVectors(t *testing.T) {
	for name, v := range loadVectors(t) {
		t.Run(name, func(t *testing.T) {
			decoded, rejected := ParseEnvelope(v.wire())
			if v.Rejected != 0 {
				if rejected == nil || rejected.Code != v.Rejected {
					t.Fatalf("%s: want rejected %d, got %v / %v", v.Description, v.Rejected, decoded, rejected)
				}
				return
			}
			if rejected != nil {
				t.Fatalf("%s: rejected: %s", v.Description, rejected.Message)
			}
			// The root's own retryable / retryAfterMs, as given (CONTRACT §4).
			root := decoded.(*Error)
			if root.Retryable != v.Root.Retryable || root.HasRetryAfter != (v.Root.RetryAfterMs != nil) ||
				(v.Root.RetryAfterMs != nil && root.RetryAfter.Milliseconds() != *v.Root.RetryAfterMs) {
				t.Errorf("%s: root retryable %v retryAfter %v (given %v), want %+v", v.Description,
					root.Retryable, root.RetryAfter, root.HasRetryAfter, *v.Root)
			}
			// The envelope is handed over as JSON text, the way the library hands it over.
			got, err := json.Marshal(ChainLinks(DecodeError(v.wire())))
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(v.Chain, &wantV); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("%s\n got: %s\nwant: %s", v.Description, got, v.Chain)
			}
		})
	}
}
