package aimux

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxChainLinks bounds how deep the decoder follows causes (the core emits at most 16 nodes
// deep; this only protects against hostile input). Links beyond it are cut and the last
// decoded node gets "cause" in Truncated.
const maxChainLinks = 256

// Variant is one entry of the error catalogue (schema/manifest.json "errors").
type Variant struct {
	Kind      string
	Code      int
	Constant  string
	Name      string
	ClassName string
}

// Variants returns the catalogue this package was generated from, in manifest order.
func Variants() []Variant { return append([]Variant(nil), variants[:]...) }

// Sentinel is the type of the ErrX values: errors.Is(err, ErrRetry) reports whether a link of
// err's chain is an AI_RetryError.
type Sentinel struct{ v int }

func (s *Sentinel) Error() string {
	return "aimux: " + variants[s.v].Name + " (" + variants[s.v].Kind + " " + strconv.Itoa(variants[s.v].Code) + ")"
}

// Variant returns the catalogue entry the sentinel stands for.
func (s *Sentinel) Variant() Variant { return variants[s.v] }

// Error is one aimux node of a decoded envelope (the root or a cause): kinds "aimux",
// "recording", "binding", "protocol", or any kind this package does not know yet.
type Error struct {
	Kind    string
	Code    int
	Name    string // error.name; "" when the payload has none (see HasName)
	Message string
	// Payload is the envelope's "error" object (name plus the variant's fields), as sent.
	Payload json.RawMessage
	// Retryable, RetryAfter and HasRetryAfter are root-only, as the envelope gives them (never
	// recomputed from the payload, CONTRACT §4). HasRetryAfter reports whether the envelope
	// carried retryAfterMs (an integer >= 0); RetryAfter is 0 without one, and may be 0 with one.
	Retryable     bool
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Raw is this node's JSON as sent (for the root: the whole envelope).
	Raw json.RawMessage
	// Truncated lists what the core cut on this node ("message", "error.<field>", "cause").
	Truncated []string

	cause    error
	attempts []error
	vidx     int // index into variants, -1 when unknown
	hasName  bool
}

// aimuxError lets the generated views embed *Error without a field named Error.
type aimuxError = Error

// Error names the error, then gives its display text (the envelope's "message"):
// "AI_APICallError: Too Many Requests". Message alone is the message.
func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = "aimux " + e.Kind + " error " + strconv.Itoa(e.Code)
	}
	if e.Message == "" {
		return name
	}
	return name + ": " + e.Message
}

// StatusCode is the node's HTTP status (error.statusCode, e.g. 429) as the envelope gives it,
// or 0 when it has none (a refused connection). An AI_RetryError's is its last attempt's, so
// the error a caller holds answers without walking the chain.
func (e *Error) StatusCode() int {
	var p struct {
		StatusCode json.Number `json:"statusCode"`
	}
	if len(e.Payload) == 0 || e.Payload[0] != '{' || json.Unmarshal(e.Payload, &p) != nil {
		return 0
	}
	n, err := strconv.ParseFloat(string(p.StatusCode), 64)
	if err != nil || n != math.Trunc(n) || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// Unwrap returns the next link of the native chain: the node's cause, or for an AI_RetryError
// the last attempt; nil at the end. The result is an *Error or a *SourceError.
func (e *Error) Unwrap() error { return e.cause }

// HasName reports whether the payload carried an error.name.
func (e *Error) HasName() bool { return e.hasName }

// Variant returns the catalogue entry this node was resolved to ((kind, name) first, then
// (kind, code)); ok is false for codes / kinds this package does not know.
func (e *Error) Variant() (v Variant, ok bool) {
	if e.vidx < 0 {
		return Variant{}, false
	}
	return variants[e.vidx], true
}

// Attempts returns the decoded error.errors of an AI_RetryError (every attempt, oldest first).
func (e *Error) Attempts() []error { return append([]error(nil), e.attempts...) }

// Is makes errors.Is(err, ErrRetry) (any generated sentinel) match a link of that variant.
func (e *Error) Is(target error) bool {
	s, ok := target.(*Sentinel)
	return ok && e.vidx >= 0 && e.vidx == s.v
}

// As makes errors.As(err, &apiErr) with apiErr *APICallError (any generated view) find a link
// of that variant.
func (e *Error) As(target any) bool { return e.asVariant(target) }

func (e *Error) fillView(v any) {
	if len(e.Payload) > 0 && e.Payload[0] == '{' {
		// Best effort: a field of an unexpected type is skipped, the others are filled.
		_ = json.Unmarshal(e.Payload, v)
	}
}

// SourceError is a snapshot of an external exception (socket, TLS, JSON decoder, file system,
// validation library) in the chain: {message, type?, cause?}.
type SourceError struct {
	Type      string // the exception's class name; "" when absent (see HasType)
	Message   string
	Raw       json.RawMessage
	Truncated []string

	cause   error
	hasType bool
}

// Error names the exception's class, then gives its message:
// "ConnectionRefusedError: [Errno 111] Connection refused".
func (s *SourceError) Error() string {
	switch {
	case s.Type == "":
		return s.Message
	case s.Message == "":
		return s.Type
	}
	return s.Type + ": " + s.Message
}

// Unwrap returns the next link (*SourceError, or *Error), nil at the end.
func (s *SourceError) Unwrap() error { return s.cause }

// sourceErrnos are the Go errors an operating-system exception of the core matches.
var sourceErrnos = map[string][]error{
	"ConnectionRefusedError": {syscall.ECONNREFUSED},
	"ConnectionResetError":   {syscall.ECONNRESET},
	"ConnectionAbortedError": {syscall.ECONNABORTED},
	"BrokenPipeError":        {syscall.EPIPE},
	"FileNotFoundError":      {fs.ErrNotExist, syscall.ENOENT},
	"PermissionError":        {fs.ErrPermission, syscall.EACCES},
	"FileExistsError":        {fs.ErrExist, syscall.EEXIST},
}

// Is lets errors.Is match an operating-system exception by Go's own errors:
// errors.Is(err, syscall.ECONNREFUSED) for a ConnectionRefusedError, fs.ErrNotExist for a
// FileNotFoundError, and so on.
func (s *SourceError) Is(target error) bool {
	for _, e := range sourceErrnos[s.Type] {
		if e == target {
			return true
		}
	}
	return false
}

// HasType reports whether the node carried a type.
func (s *SourceError) HasType() bool { return s.hasType }

var (
	byName = map[[2]string]int{}
	byCode = map[string]int{}
)

// retryName is AI_RetryError's error.name, taken from the generated catalogue.
var retryName = func() string {
	for _, v := range variants {
		if v.Kind == KindAimux && v.Code == CodeRetry {
			return v.Name
		}
	}
	panic("aimux: the generated catalogue has no RETRY variant")
}()

func init() {
	for i, v := range variants {
		k := [2]string{v.Kind, v.Name}
		if _, dup := byName[k]; !dup {
			byName[k] = i
		}
		ck := v.Kind + "\x00" + strconv.Itoa(v.Code)
		if _, dup := byCode[ck]; !dup { // code 3: the first entry (INVALID_RESPONSE_DATA)
			byCode[ck] = i
		}
	}
}

// lookup resolves a node to a catalogue entry like aimux_ops.errors.lookup: by (kind, name);
// by (kind, code) only when the payload has no name; -1 (generic) otherwise.
func lookup(kind, name string, hasName bool, code int) int {
	if hasName {
		if i, ok := byName[[2]string{kind, name}]; ok {
			return i
		}
		return -1
	}
	if i, ok := byCode[kind+"\x00"+strconv.Itoa(code)]; ok {
		return i
	}
	return -1
}

// DecodeError turns an envelope (JSON text) into the native error: an *Error whose Unwrap chain
// follows the native chain rule (DESIGN.md). An envelope the decoder refuses (see ParseEnvelope)
// still comes back as an *Error (kind "binding", code 202) carrying the bytes in Raw.
func DecodeError(envelope []byte) error {
	decoded, rejected := ParseEnvelope(envelope)
	if rejected != nil {
		return rejected
	}
	return decoded
}

// ParseEnvelope decodes like DecodeError but reports a refused envelope apart: rejected is a
// 202 *Error (the bytes in Raw) when the text is not a JSON object, its root has no string
// "kind" (a source node is not an envelope), or its root code is not an integer from 1 to
// 2147483647 and no known error.name supplies one — as every binding refuses it (CONTRACT §4:
// never a root with code 0).
//
//lint:ignore ST1008 decoded is the value asked for (a decoded error), not a failure of the call
func ParseEnvelope(envelope []byte) (decoded error, rejected *Error) {
	raw := bytes.TrimSpace(envelope)
	//lint:ignore ST1008 same shape as ParseEnvelope
	reject := func(msg string) (error, *Error) {
		e := newLocalError(KindBinding, CodeInvalidWireJSON, msg)
		e.Raw = append(json.RawMessage(nil), raw...)
		return nil, e
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		msg := "aimux: undecodable error envelope"
		if err != nil {
			msg += ": " + err.Error()
		}
		return reject(msg)
	}
	if k, ok := fields["kind"]; !ok || !isJSONString(k) {
		return reject("aimux: not an envelope: it has no 'kind' (a source node is not an envelope)")
	}
	code, outOfRange := wireCode(fields["code"])
	if outOfRange {
		return reject("aimux: not an envelope: its code is out of range (1..2147483647)")
	}
	budget := maxChainLinks
	root := decodeNode(append(json.RawMessage(nil), raw...), fields, true, &budget).(*Error)
	if code < 1 {
		if !root.hasName || root.vidx < 0 || variants[root.vidx].Name != root.Name {
			return reject("aimux: not an envelope: no valid 'code' (an integer >= 1) and no known error name")
		}
		root.Code = variants[root.vidx].Code // the known name supplies the missing code
	}
	return root, nil
}

// codeMax is the largest code a node may carry: aimux_error_code returns an int32_t.
const codeMax = 0x7fffffff

// retryAfterMaxMs is the largest retryAfterMs a root reports (aimux_ops.wire.envelope.RETRY_AFTER_MAX_MS):
// the longest time.Duration in whole milliseconds, exact in a double.
const retryAfterMaxMs = int64(time.Duration(1<<63-1) / time.Millisecond)

// wholeNumber reads a JSON number whose value is a whole number (3, 3.0 and 3e0 alike: JSON
// does not tell them apart, and JavaScript's parser cannot; DESIGN.md "Numbers on the wire"):
// its value (saturated to the int64 range) and whether it is one at all.
func wholeNumber(raw json.RawMessage) (n int64, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false // absent, or not a JSON number
	}
	var num json.Number
	if json.Unmarshal(raw, &num) != nil {
		return 0, false
	}
	if i, err := num.Int64(); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(num), 64)
	switch {
	case err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f):
		return 0, false // a fraction, or beyond a double
	case f >= 0x1p63:
		return math.MaxInt64, true
	case f < -0x1p63:
		return math.MinInt64, true
	}
	return int64(f), true
}

// wireCode is a node's code when it is a whole number from 0 to 2147483647 (else 0), and
// whether it is a whole number beyond that (a root with one is refused).
func wireCode(raw json.RawMessage) (int64, bool) {
	n, ok := wholeNumber(raw)
	switch {
	case !ok || n < 0:
		return 0, false
	case n > codeMax:
		return 0, true
	}
	return n, false
}

// newLocalError builds an error the binding itself raises (library missing, NUL in an argument).
func newLocalError(kind string, code int, message string) *Error {
	e := &Error{Kind: kind, Code: code, Message: message, vidx: lookup(kind, "", false, code)}
	if e.vidx >= 0 {
		e.Name, e.hasName = variants[e.vidx].Name, true
	}
	payload, _ := json.Marshal(map[string]string{"name": e.Name})
	e.Payload = payload
	e.Raw, _ = json.Marshal(struct { // the envelope's member order
		Kind      string          `json:"kind"`
		Code      int             `json:"code"`
		Message   string          `json:"message"`
		Error     json.RawMessage `json:"error"`
		Retryable bool            `json:"retryable"`
	}{kind, code, message, payload, false})
	return e
}

// decodeAny decodes a cause / attempt; a value that is not a JSON object ends the chain (nil).
func decodeAny(raw json.RawMessage, budget *int) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil
	}
	return decodeNode(raw, fields, false, budget)
}

// isJSONString reports whether raw is a JSON string (the test for "is an aimux node").
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// decodeNode mirrors aimux_ops.wire.envelope.native_chain: a node is an aimux node when its "kind"
// is a string, else a source node; the next link is "cause" when it is an object, or for an
// AI_RetryError whose cause is absent or null, the last element of error.errors.
func decodeNode(raw json.RawMessage, f map[string]json.RawMessage, root bool, budget *int) error {
	*budget--
	var truncated []string
	if t, ok := f["truncated"]; ok {
		_ = json.Unmarshal(t, &truncated)
	}
	causeRaw, hasCause := f["cause"]
	if hasCause && isNull(causeRaw) {
		hasCause = false
	}
	next := func() error {
		if *budget <= 0 {
			return nil
		}
		return decodeAny(causeRaw, budget)
	}

	if kindRaw, ok := f["kind"]; ok && isJSONString(kindRaw) {
		e := &Error{Kind: scalarText(kindRaw), Message: stringField(f, "message"), Raw: raw, Truncated: truncated}
		code, _ := wireCode(f["code"])
		e.Code = int(code)
		var pf map[string]json.RawMessage
		if p, ok := f["error"]; ok && !isNull(p) {
			e.Payload = p
			if json.Unmarshal(p, &pf) == nil {
				if n, ok := pf["name"]; ok && isJSONString(n) {
					e.Name, e.hasName = scalarText(n), true
				}
			}
		}
		e.vidx = lookup(e.Kind, e.Name, e.hasName, e.Code)
		if root {
			if r, ok := f["retryable"]; ok {
				_ = json.Unmarshal(r, &e.Retryable)
			}
			if ms, ok := f["retryAfterMs"]; ok {
				if n, ok := wholeNumber(ms); ok && n >= 0 && n <= retryAfterMaxMs {
					e.RetryAfter, e.HasRetryAfter = time.Duration(n)*time.Millisecond, true
				}
			}
		}
		var lastAttempt json.RawMessage
		if e.hasName && e.Name == retryName {
			var attempts []json.RawMessage
			if a, ok := pf["errors"]; ok {
				_ = json.Unmarshal(a, &attempts)
			}
			for i, a := range attempts {
				if *budget <= 0 {
					break
				}
				var af map[string]json.RawMessage
				if json.Unmarshal(a, &af) != nil || af == nil {
					continue
				}
				if i == len(attempts)-1 && !hasCause {
					// The last attempt is the next link: decode it once, reuse the value.
					lastAttempt = a
				}
				e.attempts = append(e.attempts, decodeNode(a, af, false, budget))
			}
			if !hasCause && len(attempts) > 0 {
				if lastAttempt != nil {
					e.cause = e.attempts[len(e.attempts)-1]
				}
				return e
			}
		}
		if hasCause {
			if *budget <= 0 {
				e.Truncated = append(e.Truncated, "cause")
			} else if c := next(); c != nil {
				e.cause = c
			}
		}
		return e
	}

	s := &SourceError{Message: stringField(f, "message"), Raw: raw, Truncated: truncated}
	if t, ok := f["type"]; ok && isJSONString(t) {
		s.Type, s.hasType = scalarText(t), true
	}
	if hasCause {
		if *budget <= 0 {
			s.Truncated = append(s.Truncated, "cause")
		} else if c := next(); c != nil {
			s.cause = c
		}
	}
	return s
}

// scalarText returns a JSON string's value, or the JSON text of anything else.
func scalarText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

func stringField(f map[string]json.RawMessage, key string) string {
	v, ok := f[key]
	if !ok || string(v) == "null" {
		return ""
	}
	return scalarText(v)
}
