//go:build cgo && !aimux_nopkgconfig

package aimux

// The installed library is found through pkg-config (aimux.pc from `make install`; for a prefix
// outside pkg-config's own path, PKG_CONFIG_PATH=<prefix>/lib/pkgconfig at build time): its
// Libs put <prefix>/lib in the program's RUNPATH, where dlopen("libaimux.so.1") looks (loadLibrary).
// -Wl,--as-needed drops the DT_NEEDED of -laimux (nothing here calls it directly: every symbol
// comes from dlsym), so a program whose library has gone still starts and gets the 207 that names
// what was tried. The build tag aimux_nopkgconfig builds without it (the checkout's own tests;
// a program that finds the library through AIMUX_LIB or LD_LIBRARY_PATH only).

/*
#cgo pkg-config: --define-prefix aimux
#cgo LDFLAGS: -Wl,--as-needed
*/
import "C"
