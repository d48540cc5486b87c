package aimux

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// zz_generated.go is written by `python -m aimux_ops.codegen` (make schema); `make check-schema`
// fails when it drifts. These tests check what it says against the committed manifest.

type manifestEntry struct {
	Kind      string `json:"kind"`
	Code      int    `json:"code"`
	Constant  string `json:"constant"`
	Name      string `json:"name"`
	ClassName string `json:"className"`
}

type manifestDoc struct {
	ABIVersion int             `json:"abiVersion"`
	Errors     []manifestEntry `json:"errors"`
}

// TestGeneratorCatalogue checks the generated catalogue against the manifest, entry by entry.
func TestGeneratorCatalogue(t *testing.T) {
	manifest, err := os.ReadFile(filepath.Join(repoRoot(t), "schema", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifestDoc
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Errors) != len(variants) {
		t.Fatalf("%d variants, manifest has %d", len(variants), len(m.Errors))
	}
	for i, e := range m.Errors {
		v := variants[i]
		if v.Kind != e.Kind || v.Code != e.Code || v.Name != e.Name || v.ClassName != e.ClassName || v.Constant != e.Constant {
			t.Errorf("variant %d = %+v, manifest %+v", i, v, e)
		}
		if got := lookup(e.Kind, e.Name, true, e.Code); got != i {
			t.Errorf("lookup(%s, %s) = %d, want %d", e.Kind, e.Name, got, i)
		}
		if got := KindOfCode(e.Code); got != e.Kind {
			t.Errorf("KindOfCode(%d) = %q, want %q", e.Code, got, e.Kind)
		}
	}
	if m.ABIVersion != ABIVersion {
		t.Errorf("ABIVersion %d, manifest %d", ABIVersion, m.ABIVersion)
	}
}

func TestKindOfCodeOutsideEveryRange(t *testing.T) {
	for _, code := range []int{0, -1, 400, 1000} {
		if got := KindOfCode(code); got != "" {
			t.Errorf("KindOfCode(%d) = %q, want \"\"", code, got)
		}
	}
}
