//go:build cgo && !aimux_nopkgconfig

package aimux

// The installed library is found through pkg-config (aimux-dlopen.pc from `make install`; for a
// prefix outside pkg-config's own path, PKG_CONFIG_PATH=<prefix>/lib/pkgconfig at build time): its
// Libs are the rpath alone, -Wl,-rpath,<prefix>/lib, which puts the directory in the program's
// RUNPATH, where dlopen("libaimux.so.1") looks (loadLibrary). Nothing links -laimux (every symbol
// comes from dlsym): a program whose library has gone still starts and gets the 207 that names
// what was tried. --define-prefix: a prefix moved after `make install` answers for its new place.
// The build tag aimux_nopkgconfig builds without it (the checkout's own tests; a program that
// finds the library through AIMUX_LIB or LD_LIBRARY_PATH only).

// #cgo pkg-config: --define-prefix aimux-dlopen
import "C"
