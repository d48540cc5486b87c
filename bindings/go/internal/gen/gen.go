// Package gen turns schema/manifest.json into the per-variant Go code of package aimux
// (code constants, sentinels, typed views). It is used by cmd/aimux-gen (go generate) and by
// the drift test of package aimux.
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Manifest is the part of schema/manifest.json the generator reads.
type Manifest struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	ABIVersion   int      `json:"abiVersion"`
	Kinds        []string `json:"kinds"`
	Errors       []Entry  `json:"errors"`
	RetiredCodes []int    `json:"retiredCodes"`
}

// Entry is one catalogue entry.
type Entry struct {
	Kind        string  `json:"kind"`
	Code        int     `json:"code"`
	Constant    string  `json:"constant"`
	Name        string  `json:"name"`
	ClassName   string  `json:"className"`
	Fields      []Field `json:"fields"`
	Description string  `json:"description"`
}

// Field is one payload field; Type is either a JSON type name ("integer", "string", …) or a
// JSON Schema object.
type Field struct {
	Name        string          `json:"name"`
	Type        json.RawMessage `json:"type"`
	Schema      json.RawMessage `json:"schema"`
	Description string          `json:"description"`
}

// Names the hand-written part of package aimux already uses.
var reservedTypes = map[string]bool{
	"Error": true, "SourceError": true, "Stream": true, "EventStream": true, "Call": true, "Variant": true, "Sentinel": true,
}

// Promoted members of *aimux.Error that a view field must not shadow.
var reservedMembers = map[string]bool{
	"Kind": true, "Code": true, "Name": true, "Message": true, "Payload": true, "Retryable": true,
	"RetryAfter": true, "Raw": true, "Truncated": true, "Error": true, "Unwrap": true, "As": true,
	"Is": true, "HasName": true, "Attempts": true, "Variant": true, "Node": true,
}

var initialisms = []string{"Id", "Url", "Uri", "Api", "Json", "Http", "Utf8", "Os"}

// GoName turns a camelCase or UPPER_SNAKE identifier into an exported Go name.
func GoName(s string) string {
	var parts []string
	if strings.ToUpper(s) == s {
		for _, p := range strings.Split(strings.ToLower(s), "_") {
			if p != "" {
				parts = append(parts, strings.ToUpper(p[:1])+p[1:])
			}
		}
	} else {
		cur := []rune{}
		for i, r := range s {
			if r == '_' || r == '-' || r == '.' || r == ' ' {
				if len(cur) > 0 {
					parts = append(parts, string(cur))
				}
				cur = cur[:0]
				continue
			}
			if i > 0 && unicode.IsUpper(r) && len(cur) > 0 && !unicode.IsUpper(cur[len(cur)-1]) {
				parts = append(parts, string(cur))
				cur = []rune{}
			}
			cur = append(cur, r)
		}
		if len(cur) > 0 {
			parts = append(parts, string(cur))
		}
		for i, p := range parts {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	for i, p := range parts {
		for _, in := range initialisms {
			if p == in {
				parts[i] = strings.ToUpper(p)
			}
		}
	}
	out := strings.Join(parts, "")
	if out == "" || !unicode.IsLetter(rune(out[0])) {
		out = "X" + out
	}
	return out
}

// baseName is the class name without its trailing "Error": APICallError -> APICall.
func baseName(e Entry) string {
	b := strings.TrimSuffix(e.ClassName, "Error")
	if b == "" {
		b = GoName(e.Constant)
	}
	return b
}

type schemaT struct {
	Type                 json.RawMessage `json:"type"`
	Items                *schemaT        `json:"items"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	AnyOf                []schemaT       `json:"anyOf"`
}

func simpleType(t json.RawMessage) string {
	var s string
	if json.Unmarshal(t, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(t, &ss) == nil {
		var nonNull []string
		for _, x := range ss {
			if x != "null" {
				nonNull = append(nonNull, x)
			}
		}
		if len(nonNull) == 1 {
			return nonNull[0]
		}
	}
	return ""
}

func schemaGoType(s schemaT) string {
	if len(s.AnyOf) > 0 {
		var nonNull []schemaT
		for _, a := range s.AnyOf {
			if simpleType(a.Type) != "null" {
				nonNull = append(nonNull, a)
			}
		}
		if len(nonNull) == 1 {
			return schemaGoType(nonNull[0])
		}
		return "json.RawMessage"
	}
	switch simpleType(s.Type) {
	case "integer":
		return "*int64"
	case "number":
		return "*float64"
	case "string":
		return "*string"
	case "boolean":
		return "*bool"
	case "array":
		if s.Items != nil {
			switch simpleType(s.Items.Type) {
			case "string":
				return "[]string"
			case "integer":
				return "[]int64"
			}
		}
		return "json.RawMessage"
	case "object":
		if len(s.AdditionalProperties) > 0 {
			var ap schemaT
			if json.Unmarshal(s.AdditionalProperties, &ap) == nil && simpleType(ap.Type) == "string" {
				return "map[string]string"
			}
		}
		return "json.RawMessage"
	}
	return "json.RawMessage"
}

// fieldGoType maps a manifest field type to a Go type. Scalars are pointers so that "absent"
// (never fabricated) stays distinguishable from a zero value.
func fieldGoType(f Field) string {
	raw := f.Type
	if len(f.Schema) > 0 && string(f.Schema) != "null" {
		raw = f.Schema
	}
	if len(raw) == 0 {
		return "json.RawMessage"
	}
	var s schemaT
	if raw[0] == '{' {
		if json.Unmarshal(raw, &s) != nil {
			return "json.RawMessage"
		}
		return schemaGoType(s)
	}
	t := simpleType(raw)
	switch {
	case strings.HasSuffix(t, "[]"):
		return schemaGoType(schemaT{Type: json.RawMessage(`"array"`), Items: &schemaT{Type: json.RawMessage(strconv.Quote(strings.TrimSuffix(t, "[]")))}})
	case strings.HasPrefix(t, "array<") && strings.HasSuffix(t, ">"):
		return schemaGoType(schemaT{Type: json.RawMessage(`"array"`), Items: &schemaT{Type: json.RawMessage(strconv.Quote(t[6 : len(t)-1]))}})
	}
	return schemaGoType(schemaT{Type: raw})
}

func comment(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return s
}

// Generate returns the gofmt'ed Go source for the manifest.
func Generate(manifestJSON []byte) ([]byte, error) {
	var m Manifest
	if err := json.Unmarshal(manifestJSON, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if len(m.Errors) == 0 {
		return nil, fmt.Errorf("manifest: no errors")
	}
	seen := map[string]bool{}
	for _, e := range m.Errors {
		if e.ClassName == "" || e.Kind == "" || e.Name == "" {
			return nil, fmt.Errorf("manifest: incomplete entry %+v", e)
		}
		if reservedTypes[e.ClassName] {
			return nil, fmt.Errorf("manifest: className %q collides with a hand-written type", e.ClassName)
		}
		if seen[e.ClassName] {
			return nil, fmt.Errorf("manifest: duplicate className %q", e.ClassName)
		}
		seen[e.ClassName] = true
	}

	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("// Code generated by aimux-gen from schema/manifest.json; DO NOT EDIT.\n\n")
	p("package aimux\n\n")
	p("import \"encoding/json\"\n\n")
	p("var _ json.RawMessage\n\n")
	p("// ABIVersion is the C ABI version (aimux_abi_version) this package was generated for.\n")
	p("const ABIVersion = %d\n\n", m.ABIVersion)
	p("// ManifestVersion is the aimux-ops version of the manifest this package was generated from.\n")
	p("const ManifestVersion = %q\n\n", m.Version)

	p("// The error domains (the envelope's \"kind\").\nconst (\n")
	for _, k := range m.Kinds {
		p("\tKind%s = %q\n", GoName(k), k)
	}
	p(")\n\n")

	p("// Error codes, stable and append-only (CONTRACT §1). Code 3 is shared by\n// InvalidResponseData and TypeValidation.\nconst (\n")
	for _, e := range m.Errors {
		p("\tCode%s = %d // %s %s %s\n", baseName(e), e.Code, e.Kind, e.Constant, e.Name)
	}
	p(")\n\n")
	if len(m.RetiredCodes) > 0 {
		rc := append([]int(nil), m.RetiredCodes...)
		sort.Ints(rc)
		var s []string
		for _, c := range rc {
			s = append(s, strconv.Itoa(c))
		}
		p("// RetiredCodes are never reused.\nvar RetiredCodes = []int{%s}\n\n", strings.Join(s, ", "))
	}

	p("// variants is the catalogue, in manifest order.\nvar variants = [...]Variant{\n")
	for _, e := range m.Errors {
		p("\t{Kind: %q, Code: %d, Constant: %q, Name: %q, ClassName: %q},\n", e.Kind, e.Code, e.Constant, e.Name, e.ClassName)
	}
	p("}\n\n")

	p("// Sentinels: errors.Is(err, ErrX) reports whether any link of err's chain is that variant.\nvar (\n")
	for i, e := range m.Errors {
		p("\tErr%s error = &Sentinel{v: %d} // %s\n", baseName(e), i, e.Name)
	}
	p(")\n\n")

	for i, e := range m.Errors {
		desc := comment(e.Description)
		p("// %s is the typed view of %s (%s, code %d), found with errors.As.\n", e.ClassName, e.Name, e.Kind, e.Code)
		if desc != "" {
			p("// %s\n", desc)
		}
		p("// Fields absent from the payload (never fabricated) stay nil.\n")
		p("type %s struct {\n\t*aimuxError `json:\"-\"`\n", e.ClassName)
		used := map[string]bool{}
		seenField := map[string]bool{}
		for _, f := range e.Fields {
			if f.Name == "name" || seenField[f.Name] { // a field listed twice is generated once
				continue
			}
			seenField[f.Name] = true
			gn := GoName(f.Name)
			if reservedMembers[gn] || used[gn] {
				gn += "Field"
			}
			used[gn] = true
			if d := comment(f.Description); d != "" {
				p("\t// %s\n", d)
			}
			p("\t%s %s `json:%q`\n", gn, fieldGoType(f), f.Name+",omitempty")
		}
		p("}\n\n")
		p("// Node returns the decoded link this view was made from.\n")
		p("func (v *%s) Node() *Error { return v.aimuxError }\n\n", e.ClassName)
		_ = i
	}

	p("// asVariant implements errors.As for the typed views.\n")
	p("func (e *Error) asVariant(target any) bool {\n\tswitch t := target.(type) {\n")
	for i, e := range m.Errors {
		p("\tcase **%s:\n\t\tif e.vidx != %d {\n\t\t\treturn false\n\t\t}\n", e.ClassName, i)
		p("\t\tv := &%s{aimuxError: e}\n\t\te.fillView(v)\n\t\t*t = v\n\t\treturn true\n", e.ClassName)
	}
	p("\t}\n\treturn false\n}\n")

	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt: %w\n%s", err, b.String())
	}
	return out, nil
}
