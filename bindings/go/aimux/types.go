package aimux

// The runtime of the generated op types (zz_types.go, written by `make schema` from the core's
// op models): Opt, the object and union codecs. Stainless / openai-go style: an absent field is
// told apart from null, unknown members are kept and sent again, the decoded JSON stays readable.

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
)

const (
	optAbsent uint8 = iota
	optNull
	optSet
)

// Opt is an optional field: absent (the zero value, left out of the JSON), null (Null), or a
// value (Some, String, Int, Float, Bool). Decoding tells the three apart.
type Opt[T any] struct {
	value T
	state uint8
}

// Some is an Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{value: v, state: optSet} }

// Null is an Opt sent as JSON null.
func Null[T any]() Opt[T] { return Opt[T]{state: optNull} }

// String is Some(v) for a string.
func String(v string) Opt[string] { return Some(v) }

// Int is Some(v) for an integer field.
func Int(v int) Opt[int] { return Some(v) }

// Float is Some(v) for a number field.
func Float(v float64) Opt[float64] { return Some(v) }

// Bool is Some(v) for a boolean field.
func Bool(v bool) Opt[bool] { return Some(v) }

// Ptr returns a pointer to v (a union's Of… member: OfString: aimux.Ptr("auto")).
func Ptr[T any](v T) *T { return &v }

// Get returns the value and whether there is one (false when absent or null).
func (o Opt[T]) Get() (T, bool) { return o.value, o.state == optSet }

// Value returns the value, or T's zero value when absent or null.
func (o Opt[T]) Value() T { return o.value }

// Or returns the value, or fallback when absent or null.
func (o Opt[T]) Or(fallback T) T {
	if o.state == optSet {
		return o.value
	}
	return fallback
}

// IsSet reports whether there is a value.
func (o Opt[T]) IsSet() bool { return o.state == optSet }

// IsNull reports whether the field is null (sent, or decoded, as JSON null).
func (o Opt[T]) IsNull() bool { return o.state == optNull }

// IsZero reports whether the field is absent (what the `omitzero` tag leaves out).
func (o Opt[T]) IsZero() bool { return o.state == optAbsent }

// MarshalJSON writes the value, or null.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if o.state != optSet {
		return []byte("null"), nil
	}
	return json.Marshal(o.value)
}

// UnmarshalJSON reads null as Null and anything else as the value.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	var zero T
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.value, o.state = zero, optNull
		return nil
	}
	if err := json.Unmarshal(b, &o.value); err != nil {
		return err
	}
	o.state = optSet
	return nil
}

// knownMembers is, per generated type, the JSON names its fields take.
var knownMembers sync.Map // reflect.Type -> map[string]bool

func membersOf(t reflect.Type) map[string]bool {
	if held, ok := knownMembers.Load(t); ok {
		return held.(map[string]bool)
	}
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		if name, _, _ := strings.Cut(tag, ","); name != "" && name != "-" {
			names[name] = true
		}
	}
	knownMembers.Store(t, names)
	return names
}

// marshalObject is a generated type's JSON: its fields (v is the type without its methods),
// then the extra members none of them names, in key order.
func marshalObject(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	known := membersOf(reflect.TypeOf(v))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !known[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := bytes.NewBuffer(b[:len(b)-1])
	for _, k := range keys {
		value := extra[k]
		if !json.Valid(value) {
			return nil, &json.UnsupportedValueError{Str: "ExtraFields[" + k + "] is not JSON"}
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		name, _ := json.Marshal(k)
		out.Write(name)
		out.WriteByte(':')
		out.Write(value)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// unmarshalObject decodes b into v (a pointer to the type without its methods), keeps the
// members no field names in *extra and a copy of b in *raw.
func unmarshalObject(b []byte, v any, extra *map[string]json.RawMessage, raw *json.RawMessage) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	known := membersOf(reflect.TypeOf(v).Elem())
	for k := range all {
		if known[k] {
			delete(all, k)
		}
	}
	if len(all) > 0 {
		*extra = all
	}
	*raw = append(json.RawMessage(nil), b...)
	return nil
}

// marshalUnion writes the first member that is set (each a pointer or a slice), else raw (a
// variant this version did not know, as decoded), else null.
func marshalUnion(raw json.RawMessage, members ...any) ([]byte, error) {
	for _, m := range members {
		if !reflect.ValueOf(m).IsNil() {
			return json.Marshal(m)
		}
	}
	if len(raw) > 0 {
		return raw, nil
	}
	return []byte("null"), nil
}

// jsonKind is the kind of a JSON text as a union's members are chosen: "string", "array",
// "object", "boolean", "number", or "null".
func jsonKind(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	switch b[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// unmarshalUnion keeps a copy of b in *raw and decodes it into the member its discriminator's
// value names (or, with no discriminator, its JSON kind): pairs are (tag, pointer to a member).
// A tag no member has sets none of them (the value stays readable in RawJSON).
func unmarshalUnion(b []byte, raw *json.RawMessage, discriminator string, pairs ...any) error {
	*raw = append(json.RawMessage(nil), b...)
	tag := jsonKind(b)
	if discriminator != "" {
		var head map[string]json.RawMessage
		if err := json.Unmarshal(b, &head); err != nil {
			return err
		}
		tag = ""
		if v, ok := head[discriminator]; ok {
			_ = json.Unmarshal(v, &tag)
		}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i].(string) != tag {
			continue
		}
		target := reflect.ValueOf(pairs[i+1]).Elem()
		if target.Kind() == reflect.Pointer {
			fresh := reflect.New(target.Type().Elem())
			if err := json.Unmarshal(b, fresh.Interface()); err != nil {
				return err
			}
			target.Set(fresh)
			return nil
		}
		return json.Unmarshal(b, target.Addr().Interface())
	}
	return nil
}
