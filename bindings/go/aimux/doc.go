// Package aimux is the Go binding of aimux-ops: cgo over libaimux (aimux.h, a copy of
// native/aimux.h inside this module), which it dlopen()s at run time from $AIMUX_LIB, else
// libaimux.so.1 through the system loader: LD_LIBRARY_PATH, then the program's RUNPATH, which
// the build takes from pkg-config (`#cgo pkg-config: --define-prefix aimux-dlopen`: the .pc of
// `make install`, PKG_CONFIG_PATH=<prefix>/lib/pkgconfig for a prefix pkg-config does not search),
// then the loader cache. A library that cannot be loaded is a 207 RuntimeInitError from every
// call, naming what was tried. The package needs cgo.
//
//	res, err := aimux.GenerateText(ctx, aimux.GenerateTextParams{…}) // typed (zz_types.go)
//	s, err := aimux.StreamText(ctx, aimux.StreamTextParams{…})       // *aimux.TextStream
//	res, err := aimux.Call(ctx, "generate_text", params)     // json.RawMessage result
//	s, err := aimux.Stream(ctx, "stream_text", params)       // *aimux.EventStream
//	for s.Next() { ev := s.Event() … }; err = s.Err(); s.Close()
//
// Every failure is an *Error decoded from the core's JSON envelope, with the native cause
// chain behind Unwrap (an AI_RetryError unwraps to its last attempt; external exceptions are
// *SourceError). The per-variant code (Code… constants, Err… sentinels for errors.Is, typed
// views such as *APICallError for errors.As, KindOfCode) is generated from the catalogue into
// zz_generated.go by the repository's one generator (`make schema`).
package aimux
