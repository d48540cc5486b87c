package aimux

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aimux-ops/aimux-ops/bindings/go/internal/gen"
)

// TestGeneratedUpToDate fails when zz_generated.go drifts from schema/manifest.json.
func TestGeneratedUpToDate(t *testing.T) {
	manifest, err := os.ReadFile(filepath.Join(repoRoot(t), "schema", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := gen.Generate(manifest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zz_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("zz_generated.go is out of date with schema/manifest.json: run `go generate` in bindings/go")
	}
}

// TestGeneratorCatalogue checks the generated catalogue against the manifest, entry by entry.
func TestGeneratorCatalogue(t *testing.T) {
	manifest, err := os.ReadFile(filepath.Join(repoRoot(t), "schema", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m gen.Manifest
	if err := jsonUnmarshal(manifest, &m); err != nil {
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
	}
	if m.ABIVersion != ABIVersion {
		t.Errorf("ABIVersion %d, manifest %d", ABIVersion, m.ABIVersion)
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"statusCode": "StatusCode", "modelId": "ModelID", "API_CALL": "APICall", "aimux": "Aimux",
		"responseHeaders": "ResponseHeaders", "baseURL": "BaseURL", "timeoutMs": "TimeoutMs",
	} {
		if got := gen.GoName(in); got != want {
			t.Errorf("GoName(%q) = %q, want %q", in, got, want)
		}
	}
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
