package webmcp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// forbidden keywords never reach the validator: pattern and
// patternProperties would make the host compile a website's regex, format is
// validated inconsistently across validators, and the dynamic/identity
// keywords can re-base $ref resolution onto a remote document.
var forbidden = map[string]string{
	"pattern":           "regular expressions from websites are never compiled",
	"patternProperties": "regular expressions from websites are never compiled",
	"format":            "format is not part of the supported subset",
	"$dynamicRef":       "dynamic references are not supported",
	"$dynamicAnchor":    "dynamic references are not supported",
	"$recursiveRef":     "dynamic references are not supported",
	"$recursiveAnchor":  "dynamic references are not supported",
	"$id":               "$id would re-base references",
	"$anchor":           "anchors are not supported; use #/$defs/<name>",
	"$vocabulary":       "custom vocabularies are not supported",
}

// Keywords whose value is one subschema.
var schemaKeywords = map[string]bool{
	"additionalProperties": true, "additionalItems": true, "contains": true, "propertyNames": true,
	"not": true, "if": true, "then": true, "else": true, "unevaluatedItems": true,
	"unevaluatedProperties": true, "contentSchema": true,
}

// Keywords whose value maps names (data) to subschemas.
var schemaMapKeywords = map[string]bool{
	"properties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
}

// Keywords whose value is an array of subschemas.
var schemaArrayKeywords = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}

// known is every keyword the validator reads; a key that equals one of
// them only up to case is rejected, because encoding/json (and so the
// validator) matches field names case-insensitively.
var known = func() map[string]string {
	m := map[string]string{}
	add := func(k string) { m[strings.ToLower(k)] = k }
	for k := range forbidden {
		add(k)
	}
	for k := range schemaKeywords {
		add(k)
	}
	for k := range schemaMapKeywords {
		add(k)
	}
	for k := range schemaArrayKeywords {
		add(k)
	}
	for _, k := range []string{"$schema", "$ref", "$comment", "title", "description", "default", "deprecated",
		"readOnly", "writeOnly", "examples", "type", "enum", "const", "multipleOf", "minimum", "maximum",
		"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "items", "minItems", "maxItems",
		"uniqueItems", "minContains", "maxContains", "minProperties", "maxProperties", "required",
		"dependentRequired", "dependencies", "contentEncoding", "contentMediaType", "propertyOrder"} {
		add(k)
	}
	return m
}()

type walker struct {
	root map[string]any
	refs int
}

// schema walks a value in schema position.
func (w *walker) schema(v any, path string, atRoot bool) error {
	switch s := v.(type) {
	case bool:
		return nil
	case map[string]any:
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := w.keyword(k, s[k], path, atRoot); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("subschema at %s must be an object or a boolean", path)
	}
}

func (w *walker) keyword(k string, v any, path string, atRoot bool) error {
	if why, bad := forbidden[k]; bad {
		return fmt.Errorf("keyword %q at %s is rejected: %s", k, path, why)
	}
	if canon, ok := known[strings.ToLower(k)]; ok && canon != k {
		return fmt.Errorf("keyword %q at %s differs from %q only in case", k, path, canon)
	}
	at := path + "/" + k
	switch {
	case k == "$schema":
		if !atRoot {
			return fmt.Errorf("$schema is only allowed at the root")
		}
		switch v {
		case "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
			"https://json-schema.org/draft/2020-12/schema":
		default:
			return fmt.Errorf("$schema must name draft-07 or draft 2020-12")
		}
	case k == "$ref":
		ref, ok := v.(string)
		if !ok {
			return fmt.Errorf("$ref at %s must be a string", path)
		}
		if w.refs++; w.refs > MaxSchemaRefs {
			return fmt.Errorf("schema has more than %d $ref", MaxSchemaRefs)
		}
		return w.ref(ref, path)
	case schemaKeywords[k]:
		return w.schema(v, at, false)
	case schemaMapKeywords[k]:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be an object", at)
		}
		if (k == "$defs" || k == "definitions") && !atRoot {
			return fmt.Errorf("%s is only allowed at the root", at)
		}
		for name, sub := range m {
			// name is data (a property or definition name), even when it
			// is spelled "pattern": only sub is in schema position.
			if err := w.schema(sub, at+"/"+jsonPointerEscape(name), false); err != nil {
				return err
			}
		}
	case schemaArrayKeywords[k]:
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s must be an array", at)
		}
		for i, sub := range a {
			if err := w.schema(sub, fmt.Sprintf("%s/%d", at, i), false); err != nil {
				return err
			}
		}
	case k == "items":
		if a, ok := v.([]any); ok {
			for i, sub := range a {
				if err := w.schema(sub, fmt.Sprintf("%s/%d", at, i), false); err != nil {
					return err
				}
			}
			return nil
		}
		return w.schema(v, at, false)
	case k == "dependencies":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be an object", at)
		}
		for name, sub := range m {
			if _, isList := sub.([]any); isList {
				continue // a list of property names: data
			}
			if err := w.schema(sub, at+"/"+jsonPointerEscape(name), false); err != nil {
				return err
			}
		}
	}
	// Everything else (enum, const, default, examples, title, unknown
	// keywords…) is data: its contents are not in schema position.
	return nil
}

// ref accepts only "#/$defs/<name>" and "#/definitions/<name>" naming an
// existing root definition.
func (w *walker) ref(ref, path string) error {
	var container, name string
	switch {
	case strings.HasPrefix(ref, "#/$defs/"):
		container, name = "$defs", ref[len("#/$defs/"):]
	case strings.HasPrefix(ref, "#/definitions/"):
		container, name = "definitions", ref[len("#/definitions/"):]
	default:
		return fmt.Errorf("$ref at %s must be #/$defs/<name> or #/definitions/<name>", path)
	}
	if name == "" || strings.ContainsAny(name, "/~%#") {
		return fmt.Errorf("$ref at %s must name one definition: #/%s/<name>", path, container)
	}
	defs, _ := w.root[container].(map[string]any)
	if _, ok := defs[name]; !ok {
		return fmt.Errorf("$ref at %s names a missing definition", path)
	}
	return nil
}

// jsonPointerEscape is on the hot path of every property; errors are
// cleaned and cut once, in Sanitize.
func jsonPointerEscape(s string) string {
	if strings.ContainsAny(s, "~/") {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return s
}

// typedCheck re-checks, on the validator's own parse of the canonical bytes,
// that nothing the raw walk rejects reached it. It is a second line: the raw
// walk already rejected these, so a failure here is a bug in the walk.
func typedCheck(s *jsonschema.Schema, depth int) error {
	if s == nil {
		return nil
	}
	if depth > MaxSchemaDepth {
		return fmt.Errorf("schema nests deeper than %d", MaxSchemaDepth)
	}
	if s.Pattern != "" || len(s.PatternProperties) > 0 || s.Format != "" || s.DynamicRef != "" ||
		s.DynamicAnchor != "" || s.ID != "" || s.Anchor != "" {
		return fmt.Errorf("schema uses a keyword outside the supported subset")
	}
	if s.Ref != "" && !strings.HasPrefix(s.Ref, "#/$defs/") && !strings.HasPrefix(s.Ref, "#/definitions/") {
		return fmt.Errorf("$ref must be #/$defs/<name> or #/definitions/<name>")
	}
	var subs []*jsonschema.Schema
	for _, m := range []map[string]*jsonschema.Schema{s.Defs, s.Definitions, s.DependencySchemas, s.Properties, s.DependentSchemas} {
		for _, sub := range m {
			subs = append(subs, sub)
		}
	}
	subs = append(subs, s.PrefixItems...)
	subs = append(subs, s.ItemsArray...)
	subs = append(subs, s.AllOf...)
	subs = append(subs, s.AnyOf...)
	subs = append(subs, s.OneOf...)
	subs = append(subs, s.Items, s.AdditionalItems, s.Contains, s.UnevaluatedItems, s.AdditionalProperties,
		s.PropertyNames, s.UnevaluatedProperties, s.Not, s.If, s.Then, s.Else, s.ContentSchema)
	for _, sub := range subs {
		if err := typedCheck(sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}
