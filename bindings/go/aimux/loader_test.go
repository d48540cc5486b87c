package aimux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// TestNoLibraryFindable re-runs this test binary with no AIMUX_LIB and an empty LD_LIBRARY_PATH:
// every call must fail with a 207 RUNTIME_INIT error naming what was tried and the fix.
func TestNoLibraryFindable(t *testing.T) {
	if os.Getenv("AIMUX_GO_HELPER") == "nolib" {
		_, err := Call(context.Background(), "aimux.version", nil)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindBinding || e.Code != CodeRuntimeInit || e.Name != "RuntimeInitError" {
			t.Fatalf("want a 207 RuntimeInitError, got %v", err)
		}
		for _, want := range []string{"Tried: AIMUX_LIB (not set); libaimux.so.1 through the system loader", "Fix: ", "LD_LIBRARY_PATH", "make install PREFIX="} {
			if !strings.Contains(e.Message, want) {
				t.Fatalf("message lacks %q: %q", want, e.Message)
			}
		}
		if LibraryPath() != "" {
			t.Fatalf("LibraryPath() = %q with no library", LibraryPath())
		}
		if _, err2 := Stream(context.Background(), "stream_text", nil); !errors.Is(err2, ErrRuntimeInit) {
			t.Fatalf("Stream: %v", err2)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoLibraryFindable$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIMUX_LIB=") && !strings.HasPrefix(kv, "LD_LIBRARY_PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AIMUX_GO_HELPER=nolib")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNoLibraryFindable") {
		t.Fatalf("helper process failed: %v\n%s", err, out)
	}
}

// TestSonameThroughTheLoader re-runs this test binary with no AIMUX_LIB and LD_LIBRARY_PATH
// naming a directory that holds libaimux.so.1: the system loader finds it.
func TestSonameThroughTheLoader(t *testing.T) {
	if os.Getenv("AIMUX_GO_HELPER") == "soname" {
		res, err := Call(context.Background(), "aimux.version", nil)
		if err != nil || !strings.Contains(string(res), `"abiVersion":1`) {
			t.Fatalf("aimux.version: %s, %v", res, err)
		}
		if want := os.Getenv("AIMUX_GO_WANT"); LibraryPath() != want {
			t.Fatalf("LibraryPath() = %q, want %q", LibraryPath(), want)
		}
		return
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libaimux.so.1")
	if err := os.Symlink(LibraryPath(), lib); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSonameThroughTheLoader$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIMUX_LIB=") && !strings.HasPrefix(kv, "LD_LIBRARY_PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AIMUX_GO_HELPER=soname", "LD_LIBRARY_PATH="+dir, "AIMUX_GO_WANT="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSonameThroughTheLoader") {
		t.Fatalf("helper process failed: %v\n%s", err, out)
	}
}

// TestBuildWithoutCgoSaysWhy builds the package with CGO_ENABLED=0: it must fail, and the first
// error must say that cgo is needed (cgo_required.go), not `undefined: streamCancel`.
func TestBuildWithoutCgoSaysWhy(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is not on PATH: %v", err)
	}
	cmd := exec.Command(goTool, "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a CGO_ENABLED=0 build succeeded:\n%s", out)
	}
	var first string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "./") || strings.HasPrefix(line, "cgo_required.go") {
			first = line
			break
		}
	}
	if !strings.Contains(first, "cgo_required.go") || !strings.Contains(first, "this package needs cgo: build with CGO_ENABLED=1") {
		t.Fatalf("first error is not the cgo message: %q\n%s", first, out)
	}
}
