//go:build !cgo

package aimux

// This package calls libaimux through cgo: without it nothing else in the package can build, and
// this line makes the compiler say why before any other error.
var _ int = "aimux: this package needs cgo: build with CGO_ENABLED=1 and a C compiler (gcc) on PATH"
