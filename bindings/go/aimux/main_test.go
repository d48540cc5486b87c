package aimux

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain is the Go binding's "in-repo build (development only)" step of CONTRACT §3: `go test`
// runs in bindings/go/aimux, so when AIMUX_LIB is not set the tests use <repo>/native/build/libaimux.so.
// Helper processes that test the loader itself (AIMUX_GO_HELPER=nolib, soname) are left alone.
func TestMain(m *testing.M) {
	if os.Getenv("AIMUX_LIB") == "" && !loaderHelper(os.Getenv("AIMUX_GO_HELPER")) {
		if dev, err := filepath.Abs(filepath.Join("..", "..", "..", "native", "build", "libaimux.so")); err == nil {
			if _, err := os.Stat(dev); err == nil {
				os.Setenv("AIMUX_LIB", dev)
			}
		}
	}
	os.Exit(m.Run())
}

func loaderHelper(name string) bool { return name == "nolib" || name == "soname" }
