package aimux

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "aimux.h"

// aimux.h and aimux_codes.h are copies of native/'s inside this module (so the package builds from
// a module cache, a vendor directory and with -trimpath), written by `make schema`;
// `make check-schema` fails when they drift.
// The library is dlopen()ed (RTLD_LOCAL) at run time (see loadLibrary), so nothing links against
// it; each function is reached through a pointer whose type comes from aimux.h.
static __typeof__(aimux_abi_version)   *p_abi_version;
static __typeof__(aimux_call)          *p_call;
static __typeof__(aimux_stream)        *p_stream;
static __typeof__(aimux_stream_next)   *p_stream_next;
static __typeof__(aimux_stream_cancel) *p_stream_cancel;
static __typeof__(aimux_stream_free)   *p_stream_free;
static __typeof__(aimux_error_code)    *p_error_code;
static __typeof__(aimux_error_message) *p_error_message;
static __typeof__(aimux_error_json)    *p_error_json;
static __typeof__(aimux_error_free)    *p_error_free;
static __typeof__(aimux_string_free)   *p_string_free;
// Extensions (aimux.h, below the contract): NULL when the library lacks them; the stream then
// reads one event per aimux_stream_next.
static __typeof__(aimux_stream_next_batch) *p_stream_next_batch;
static __typeof__(aimux_stream_poll)       *p_stream_poll;
static __typeof__(aimux_stream_tool_result) *p_stream_tool_result;

// Ownership accounting: every non-NULL string / error the library hands out, and every one we
// give back. The tests check that the two match (each freed exactly once).
static volatile long n_str_out, n_str_freed, n_err_out, n_err_freed;

static char *aimuxgo_dup(const char *a, const char *b) {
	size_t la = strlen(a), lb = b ? strlen(b) : 0;
	char *s = malloc(la + lb + 1);
	if (!s) return NULL;
	memcpy(s, a, la);
	if (lb) memcpy(s + la, b, lb);
	s[la + lb] = 0;
	return s;
}

#define AIMUXGO_SYM(var, name) \
	do { *(void **)(&var) = dlsym(h, name); \
	     if (!var) { char *m = aimuxgo_dup("missing symbol ", name); dlclose(h); return m; } } while (0)

// Returns NULL on success, else a malloc'ed message (freed by the caller with free()).
static char *aimuxgo_load(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		return aimuxgo_dup(e ? e : "dlopen failed", NULL);
	}
	AIMUXGO_SYM(p_abi_version, "aimux_abi_version");
	AIMUXGO_SYM(p_call, "aimux_call");
	AIMUXGO_SYM(p_stream, "aimux_stream");
	AIMUXGO_SYM(p_stream_next, "aimux_stream_next");
	AIMUXGO_SYM(p_stream_cancel, "aimux_stream_cancel");
	AIMUXGO_SYM(p_stream_free, "aimux_stream_free");
	AIMUXGO_SYM(p_error_code, "aimux_error_code");
	AIMUXGO_SYM(p_error_message, "aimux_error_message");
	AIMUXGO_SYM(p_error_json, "aimux_error_json");
	AIMUXGO_SYM(p_error_free, "aimux_error_free");
	AIMUXGO_SYM(p_string_free, "aimux_string_free");
	*(void **)(&p_stream_next_batch) = dlsym(h, "aimux_stream_next_batch");
	*(void **)(&p_stream_poll) = dlsym(h, "aimux_stream_poll");
	if (!p_stream_next_batch || !p_stream_poll) p_stream_next_batch = NULL, p_stream_poll = NULL;
	*(void **)(&p_stream_tool_result) = dlsym(h, "aimux_stream_tool_result");
	return NULL;
}

static uint32_t aimuxgo_abi_version(void) { return p_abi_version(); }

// The file the loaded library came from (malloc'ed), or NULL.
static char *aimuxgo_loaded_path(void) {
	Dl_info info;
	if (!p_abi_version || !dladdr(*(void **)(&p_abi_version), &info) || !info.dli_fname) return NULL;
	return aimuxgo_dup(info.dli_fname, NULL);
}

static void aimuxgo_count(aimux_error_t *err, char *out) {
	if (err) __sync_fetch_and_add(&n_err_out, 1);
	if (out) __sync_fetch_and_add(&n_str_out, 1);
}

static aimux_error_t *aimuxgo_call(const char *op, const char *params, char **out) {
	aimux_error_t *err = p_call(op, params, out);
	aimuxgo_count(err, *out);
	return err;
}

static aimux_error_t *aimuxgo_stream(const char *op, const char *params, uint64_t *out) {
	aimux_error_t *err = p_stream(op, params, out);
	aimuxgo_count(err, NULL);
	return err;
}

static aimux_error_t *aimuxgo_stream_next(uint64_t h, char **out) {
	aimux_error_t *err = p_stream_next(h, out);
	aimuxgo_count(err, *out);
	return err;
}

static int aimuxgo_has_batches(void) { return p_stream_next_batch != NULL; }

// A batch of events (blocking: aimux_stream_next_batch; else aimux_stream_poll), *len its length.
static aimux_error_t *aimuxgo_stream_batch(int blocking, uint64_t h, size_t max, char **out,
                                           size_t *len, int32_t *ended) {
	aimux_error_t *err = (blocking ? p_stream_next_batch : p_stream_poll)(h, max, out, ended);
	aimuxgo_count(err, *out);
	*len = *out ? strlen(*out) : 0;
	return err;
}

static int aimuxgo_has_tool_result(void) { return p_stream_tool_result != NULL; }

static aimux_error_t *aimuxgo_stream_tool_result(uint64_t h, const char *id, const char *answer) {
	aimux_error_t *err = p_stream_tool_result(h, id, answer);
	aimuxgo_count(err, NULL);
	return err;
}

static void aimuxgo_stream_cancel(uint64_t h) { p_stream_cancel(h); }
static void aimuxgo_stream_free(uint64_t h) { p_stream_free(h); }
static int32_t aimuxgo_error_code(const aimux_error_t *e) { return p_error_code(e); }

static char *aimuxgo_error_json(const aimux_error_t *e) {
	char *s = p_error_json(e);
	aimuxgo_count(NULL, s);
	return s;
}

static char *aimuxgo_error_message(const aimux_error_t *e) {
	char *s = p_error_message(e);
	aimuxgo_count(NULL, s);
	return s;
}

static void aimuxgo_error_free(aimux_error_t *e) {
	if (e) __sync_fetch_and_add(&n_err_freed, 1);
	p_error_free(e);
}

static void aimuxgo_string_free(char *s) {
	if (s) __sync_fetch_and_add(&n_str_freed, 1);
	p_string_free(s);
}

static void aimuxgo_counts(long *out) {
	out[0] = __sync_fetch_and_add(&n_str_out, 0);
	out[1] = __sync_fetch_and_add(&n_str_freed, 0);
	out[2] = __sync_fetch_and_add(&n_err_out, 0);
	out[3] = __sync_fetch_and_add(&n_err_freed, 0);
}
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// Soname is the name the system loader knows the library by.
const Soname = "libaimux.so.1"

// buildLibDir is a directory holding libaimux.so.1, set at build time; not needed when the
// package is built through pkg-config (pkgconfig.go: the RUNPATH), but for a build with the tag
// aimux_nopkgconfig:
//
//	go build -tags aimux_nopkgconfig -ldflags "-X 'github.com/aimux-ops/aimux-ops/bindings/go/aimux.buildLibDir=<prefix>/lib'"
var buildLibDir string

var (
	loadOnce sync.Once
	loadErr  error
	libPath  string
)

// LibraryPath returns the file the library was loaded from (loading it on first use), or "" when
// it cannot be loaded (Call and Stream then return the 207 error saying why).
func LibraryPath() string {
	_ = load()
	return libPath
}

const loadFix = "Fix: install the library (`make install PREFIX=<dir>` in an aimux-ops checkout) and build the " +
	"program with PKG_CONFIG_PATH=<dir>/lib/pkgconfig (pkg-config puts <dir>/lib in its RUNPATH), or put <dir>/lib " +
	"on LD_LIBRARY_PATH (or register it with ldconfig), or set AIMUX_LIB to the path of libaimux.so.1"

// tryLoad dlopen()s path and binds every symbol; "" on success, else why not.
func tryLoad(path string) string {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.aimuxgo_load(cpath); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return C.GoString(msg)
	}
	return ""
}

func loadedPath(fallback string) string {
	p := C.aimuxgo_loaded_path()
	if p == nil {
		return fallback
	}
	defer C.free(unsafe.Pointer(p))
	return C.GoString(p)
}

// loadLibrary finds the library the one way every binding does (CONTRACT §3): $AIMUX_LIB; else
// libaimux.so.1 through the system loader (LD_LIBRARY_PATH, the program's RUNPATH that pkg-config
// gave it, the loader cache, the default directories); else buildLibDir when set. In the
// checkout, the tests point AIMUX_LIB at the in-repo build (a Go binary cannot know where its
// source was without embedding build paths, which -trimpath forbids).
func loadLibrary() (string, error) {
	if p := os.Getenv("AIMUX_LIB"); p != "" {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if msg := tryLoad(p); msg != "" {
			return "", loadError(fmt.Sprintf("aimux: cannot load libaimux from AIMUX_LIB=%s: %s. Fix: point AIMUX_LIB "+
				"at an installed libaimux.so.1 (<prefix>/lib after `make install PREFIX=<prefix>`), or unset it to use "+
				"the system loader", p, msg))
		}
		return p, nil
	}
	tried := []string{"AIMUX_LIB (not set)"}
	msg := tryLoad(Soname)
	if msg == "" {
		return loadedPath(Soname), nil
	}
	tried = append(tried, fmt.Sprintf("%s through the system loader (LD_LIBRARY_PATH=%s, the loader cache, the "+
		"default directories): %s", Soname, os.Getenv("LD_LIBRARY_PATH"), msg))
	if buildLibDir != "" {
		p := filepath.Join(buildLibDir, Soname)
		msg := tryLoad(p)
		if msg == "" {
			return p, nil
		}
		tried = append(tried, fmt.Sprintf("%s (the build-time directory): %s", p, msg))
	}
	return "", loadError(fmt.Sprintf("aimux: cannot load libaimux. Tried: %s. %s", strings.Join(tried, "; "), loadFix))
}

// load dlopen()s the library once; a failure is remembered and returned by every call as a
// binding-domain RUNTIME_INIT error.
func load() error {
	loadOnce.Do(func() {
		path, err := loadLibrary()
		if err != nil {
			loadErr = err
			return
		}
		if v := uint32(C.aimuxgo_abi_version()); v != ABIVersion {
			loadErr = loadError(fmt.Sprintf("aimux: %s has ABI version %d, this binding needs %d. Fix: install the "+
				"libaimux that matches this module version, or set AIMUX_LIB to it", path, v, ABIVersion))
			return
		}
		libPath = path
	})
	return loadErr
}

func loadError(msg string) error { return newLocalError(KindBinding, CodeRuntimeInit, msg) }

// ABI returns aimux_abi_version() of the loaded library.
func ABI() (uint32, error) {
	if err := load(); err != nil {
		return 0, err
	}
	return uint32(C.aimuxgo_abi_version()), nil
}

// takeError decodes an error returned by the library and frees it (exactly once).
func takeError(e *C.aimux_error_t) error {
	defer C.aimuxgo_error_free(e)
	js := C.aimuxgo_error_json(e)
	if js == nil {
		// Only when out of memory: fall back on the code and message accessors.
		code := int(C.aimuxgo_error_code(e))
		msg := C.aimuxgo_error_message(e)
		defer C.aimuxgo_string_free(msg)
		text := "aimux: error without JSON"
		if msg != nil {
			text = C.GoString(msg)
		}
		out := newLocalError("", code, text)
		if kind := KindOfCode(code); kind != "" {
			out.Kind = kind
		}
		return out
	}
	defer C.aimuxgo_string_free(js)
	return DecodeError([]byte(C.GoString(js)))
}

// takeString copies a library string into Go memory and frees it (exactly once).
func takeString(s *C.char) []byte {
	defer C.aimuxgo_string_free(s)
	return []byte(C.GoString(s))
}

// marshalParams turns params into JSON text: json.RawMessage and []byte are sent as they are,
// nil as {}, anything else through encoding/json.
func marshalParams(params any) (string, error) {
	var b []byte
	switch p := params.(type) {
	case nil:
		b = []byte("{}")
	case json.RawMessage:
		b = p
	case []byte:
		b = p
	case string:
		// A string is JSON text too (e.g. `{"prompt": "hi"}`).
		b = []byte(p)
	default:
		var err error
		if b, err = json.Marshal(p); err != nil {
			e := newLocalError(KindBinding, CodeInvalidWireJSON, "aimux: params cannot be encoded as JSON: "+err.Error())
			return "", e
		}
	}
	if strings.IndexByte(string(b), 0) >= 0 {
		return "", newLocalError(KindBinding, CodeInvalidWireJSON, "aimux: params contain a NUL byte")
	}
	return string(b), nil
}

// checkOp refuses an op the library could not see whole (a C string ends at the first NUL):
// 300 UnknownOpError, as in every binding (CONTRACT §4), never a silently truncated call.
func checkOp(op string) error {
	if strings.IndexByte(op, 0) >= 0 {
		kind := KindOfCode(CodeUnknownOp) // code, kind and error.name from the generated catalogue
		name := variants[lookup(kind, "", false, CodeUnknownOp)].Name
		env, _ := json.Marshal(struct {
			Kind      string            `json:"kind"`
			Code      int               `json:"code"`
			Message   string            `json:"message"`
			Error     map[string]string `json:"error"`
			Retryable bool              `json:"retryable"`
		}{kind, CodeUnknownOp, "unknown op (the name contains a NUL character)",
			map[string]string{"name": name, "op": op}, false})
		return DecodeError(env)
	}
	return nil
}

// ownAPI is how this package runs an op of each mode: the C ABI's name a wrong mode's message
// ends with, and the name it shows instead (the core cannot know its caller across the C ABI).
var ownAPI = map[string][2]string{
	"call":   {"aimux_call", "aimux.Call (typed: aimux.GenerateText, aimux.GenerateObject)"},
	"stream": {"aimux_stream", "aimux.Stream (typed: aimux.StreamText)"},
}

// namingOwnAPI makes a wrong mode's message name this package's functions; code, kind, name,
// payload and Raw (the core's envelope) are kept.
func namingOwnAPI(err error) error {
	e, ok := err.(*Error)
	if !ok || e.Code != CodeWrongMode {
		return err
	}
	var payload struct {
		Expected string `json:"expected"`
	}
	if json.Unmarshal(e.Payload, &payload) != nil {
		return err
	}
	names, known := ownAPI[payload.Expected]
	if tail := "; use " + names[0]; known && strings.HasSuffix(e.Message, tail) {
		e.Message = strings.TrimSuffix(e.Message, tail) + "; use " + names[1]
	}
	return err
}

func callNative(op, params string) (json.RawMessage, error) {
	cop := C.CString(op)
	defer C.free(unsafe.Pointer(cop))
	cparams := C.CString(params)
	defer C.free(unsafe.Pointer(cparams))
	var out *C.char
	if e := C.aimuxgo_call(cop, cparams, &out); e != nil {
		C.aimuxgo_string_free(out) // NULL per the contract; freed anyway should it not be
		return nil, namingOwnAPI(takeError(e))
	}
	if out == nil {
		return nil, newLocalError(KindBinding, CodeInternal, "aimux: aimux_call returned neither a result nor an error")
	}
	return json.RawMessage(takeString(out)), nil
}

// prepare is what Call and Stream do before the native call: a nil ctx is Background, a done
// ctx, an invalid op, params that cannot be JSON and a library that cannot load all fail here.
func prepare(ctx context.Context, op string, params any) (context.Context, string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return ctx, "", err
	}
	if err := checkOp(op); err != nil {
		return ctx, "", err
	}
	p, err := marshalParams(params)
	if err != nil {
		return ctx, "", err
	}
	if err := load(); err != nil {
		return ctx, "", err
	}
	return ctx, p, nil
}

// Call runs a request/response op ("aimux.version", "aimux.manifest", "generate_text", …) and
// returns its result JSON. params is a value for encoding/json, or JSON text (json.RawMessage,
// []byte or string); nil means {}. A failure is an *Error (errors.As / errors.Is work on its
// chain). The native call cannot be interrupted: when ctx ends first, Call returns ctx.Err()
// at once and the abandoned call finishes (and is freed) in the background; use the op's
// timeoutMs to bound the work itself.
func Call(ctx context.Context, op string, params any) (json.RawMessage, error) {
	ctx, p, err := prepare(ctx, op, params)
	if err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		return callNative(op, p)
	}
	type result struct {
		res json.RawMessage
		err error
	}
	ch := make(chan result, 1)
	go func() {
		r, e := callNative(op, p)
		ch <- result{r, e}
	}()
	select {
	case r := <-ch:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Counts reports the library strings and errors handed out and freed so far (for tests and
// leak checks): strings out, strings freed, errors out, errors freed.
func Counts() (stringsOut, stringsFreed, errorsOut, errorsFreed int64) {
	var c [4]C.long
	C.aimuxgo_counts(&c[0])
	return int64(c[0]), int64(c[1]), int64(c[2]), int64(c[3])
}

func streamStart(op, params string) (uint64, error) {
	cop := C.CString(op)
	defer C.free(unsafe.Pointer(cop))
	cparams := C.CString(params)
	defer C.free(unsafe.Pointer(cparams))
	var h C.uint64_t
	if e := C.aimuxgo_stream(cop, cparams, &h); e != nil {
		return 0, namingOwnAPI(takeError(e))
	}
	return uint64(h), nil
}

// streamNext returns the next event, or nil at the end.
func streamNext(h uint64) (json.RawMessage, error) {
	var out *C.char
	if e := C.aimuxgo_stream_next(C.uint64_t(h), &out); e != nil {
		C.aimuxgo_string_free(out) // NULL per the contract; freed anyway should it not be
		return nil, takeError(e)
	}
	if out == nil {
		return nil, nil
	}
	return json.RawMessage(takeString(out)), nil
}

// batchesLoaded: the loaded library has aimux_stream_next_batch and aimux_stream_poll (an
// extension of the C ABI; without them a stream reads one event per aimux_stream_next).
func batchesLoaded() bool { return C.aimuxgo_has_batches() != 0 }

// streamBatch returns the next events as one JSON array ("[e1,e2,...]", a Go copy) and whether
// the stream is over after them: blocking, aimux_stream_next_batch (nil only at the end); else
// aimux_stream_poll (never blocks; nil when nothing is ready).
func streamBatch(h uint64, max int, blocking bool) ([]byte, bool, error) {
	var out *C.char
	var n C.size_t
	var ended C.int32_t
	b := C.int(0)
	if blocking {
		b = 1
	}
	if e := C.aimuxgo_stream_batch(b, C.uint64_t(h), C.size_t(max), &out, &n, &ended); e != nil {
		C.aimuxgo_string_free(out) // NULL per the contract; freed anyway should it not be
		return nil, true, takeError(e)
	}
	if out == nil {
		return nil, ended != 0, nil
	}
	batch := C.GoBytes(unsafe.Pointer(out), C.int(n))
	C.aimuxgo_string_free(out)
	return batch, ended != 0, nil
}

// streamToolResult answers one host tool call (aimux_stream_tool_result); nil when taken. A
// library without the function refuses every answer (8, unsupported).
func streamToolResult(h uint64, toolCallID, answer string) error {
	if C.aimuxgo_has_tool_result() == 0 {
		return newLocalError(KindOfCode(CodeUnsupportedFunctionality), CodeUnsupportedFunctionality,
			"aimux: the loaded libaimux has no aimux_stream_tool_result (host tools need a newer library)")
	}
	cid := C.CString(toolCallID)
	defer C.free(unsafe.Pointer(cid))
	cans := C.CString(answer)
	defer C.free(unsafe.Pointer(cans))
	if e := C.aimuxgo_stream_tool_result(C.uint64_t(h), cid, cans); e != nil {
		return takeError(e)
	}
	return nil
}

func streamCancel(h uint64) { C.aimuxgo_stream_cancel(C.uint64_t(h)) }
func streamFree(h uint64)   { C.aimuxgo_stream_free(C.uint64_t(h)) }
