package aimux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestAimuxLibIsHonoured re-runs this test binary with AIMUX_LIB pointing at a file that is not
// a library: every call must then fail with a binding RUNTIME_INIT error naming that path.
func TestAimuxLibIsHonoured(t *testing.T) {
	if os.Getenv("AIMUX_GO_HELPER") == "badlib" {
		_, err := Call(context.Background(), "aimux.version", nil)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindBinding || e.Code != CodeRuntimeInit || !errors.Is(err, ErrRuntimeInit) {
			t.Fatalf("want a 207 error, got %v", err)
		}
		if !strings.Contains(e.Message, os.Getenv("AIMUX_LIB")) {
			t.Fatalf("message does not name the library: %q", e.Message)
		}
		if _, err2 := Stream(context.Background(), "stream_text", nil); !errors.Is(err2, ErrRuntimeInit) {
			t.Fatalf("Stream: %v", err2)
		}
		return
	}
	bad := t.TempDir() + "/not-a-library.so"
	if err := os.WriteFile(bad, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAimuxLibIsHonoured$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "AIMUX_GO_HELPER=badlib", "AIMUX_LIB="+bad)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAimuxLibIsHonoured") {
		t.Fatalf("helper process failed: %v\n%s", err, out)
	}
	if LibraryPath() == bad {
		t.Fatal("the parent must not see the child's AIMUX_LIB")
	}
}
