package api

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
)

// schemaGen turns Go types into JSON Schemas the way encoding/json writes
// and reads them. Named structs become components. A struct is read in one
// of two modes: as a response every field without omitempty is always sent
// (required); as a request no field is required (a missing field decodes
// to its zero value, and the handler's validate says what it needs), and
// null is accepted wherever Go decodes it.
type schemaGen struct {
	components openapi3.Schemas
	names      map[genKey]string
	taken      map[string]genKey
}

type genKey struct {
	t       reflect.Type
	request bool
}

func newSchemaGen() *schemaGen {
	return &schemaGen{components: openapi3.Schemas{}, names: map[genKey]string{}, taken: map[string]genKey{}}
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

func types(t ...string) *openapi3.Types { v := openapi3.Types(t); return &v }

// nullable lets a schema also be null (OpenAPI 3.1: a type array, or an
// anyOf around a reference).
func nullable(s *openapi3.SchemaRef) *openapi3.SchemaRef {
	if s.Ref == "" && s.Value.Type != nil && len(*s.Value.Type) > 0 {
		if !s.Value.Type.Includes("null") {
			v := *s.Value
			v.Type = types(append(append([]string{}, *s.Value.Type...), "null")...)
			return openapi3.NewSchemaRef("", &v)
		}
		return s
	}
	if s.Ref == "" && len(s.Value.AnyOf) > 0 {
		return s
	}
	return openapi3.NewSchemaRef("", &openapi3.Schema{AnyOf: openapi3.SchemaRefs{s, openapi3.NewSchemaRef("", &openapi3.Schema{Type: types("null")})}})
}

// anyValue is any JSON value, null included (kin-openapi's validator
// wants null said outright).
func anyValue() *openapi3.SchemaRef {
	return nullable(openapi3.NewSchemaRef("", &openapi3.Schema{}))
}

func (g *schemaGen) schema(t reflect.Type, request bool) *openapi3.SchemaRef {
	if t.Kind() == reflect.Pointer {
		return nullable(g.schema(t.Elem(), request))
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return anyValue()
	}
	if s := g.special(t); s != nil {
		return openapi3.NewSchemaRef("", s)
	}
	switch t.Kind() {
	case reflect.Bool:
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: types("boolean")})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		// What decoding into the Go type accepts (a `limit` tag narrows it).
		lo, hi := intBounds(t.Kind())
		s := &openapi3.Schema{Type: types("integer"), Format: intFormat(t.Kind()),
			Min: openapi3.Float64Ptr(lo), Max: openapi3.Float64Ptr(hi)}
		return openapi3.NewSchemaRef("", s)
	case reflect.Float32, reflect.Float64:
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: types("number")})
	case reflect.String:
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: types("string")})
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			s := openapi3.NewSchemaRef("", &openapi3.Schema{Type: types("string"), ContentEncoding: "base64"})
			return g.maybeNull(s, request)
		}
		s := openapi3.NewSchemaRef("", &openapi3.Schema{Type: types("array"), Items: g.schema(t.Elem(), request)})
		if t.Kind() == reflect.Array {
			n := uint64(t.Len())
			s.Value.MinItems, s.Value.MaxItems = n, &n
			return s
		}
		return g.maybeNull(s, request)
	case reflect.Map:
		s := &openapi3.Schema{Type: types("object"), AdditionalProperties: openapi3.AdditionalProperties{Schema: g.schema(t.Elem(), request)}}
		return g.maybeNull(openapi3.NewSchemaRef("", s), request)
	case reflect.Struct:
		return g.structRef(t, request)
	}
	panic(fmt.Sprintf("api: no JSON schema for %s", t))
}

// maybeNull: a nil slice or map is sent as null, but handlers answer
// empty ones (the API tests hold them to it) unless the field is tagged
// `openapi:"nullable"`; a request may send null.
func (g *schemaGen) maybeNull(s *openapi3.SchemaRef, request bool) *openapi3.SchemaRef {
	if request {
		return nullable(s)
	}
	return s
}

// special covers types that encode themselves.
func (g *schemaGen) special(t reflect.Type) *openapi3.Schema {
	switch {
	case t == timeType:
		return &openapi3.Schema{Type: types("string"), Format: "date-time"}
	case t.String() == "uuid.UUID":
		return &openapi3.Schema{Type: types("string"), Format: "uuid"}
	}
	if s, ok := knownMarshalers[t.String()]; ok {
		c := *s
		return &c
	}
	pt := reflect.PointerTo(t)
	if t.Implements(jsonMarshaler) || pt.Implements(jsonMarshaler) || pt.Implements(jsonUnmarshaler) {
		panic(fmt.Sprintf("api: %s encodes itself: add its schema to knownMarshalers", t))
	}
	if t.Implements(textMarshaler) || pt.Implements(textMarshaler) {
		return &openapi3.Schema{Type: types("string")}
	}
	return nil
}

// knownMarshalers are the schemas of the types with their own JSON
// encoding that the API sends or reads.
var knownMarshalers = map[string]*openapi3.Schema{}

func (g *schemaGen) structRef(t reflect.Type, request bool) *openapi3.SchemaRef {
	if t.Name() == "" {
		return openapi3.NewSchemaRef("", g.structSchema(t, request))
	}
	key := genKey{t, request}
	name, ok := g.names[key]
	if !ok {
		name = g.componentName(key)
		g.names[key], g.taken[name] = name, key
		g.components[name] = openapi3.NewSchemaRef("", &openapi3.Schema{}) // placeholder for cycles
		g.components[name] = openapi3.NewSchemaRef("", g.structSchema(t, request))
	}
	return openapi3.NewSchemaRef("#/components/schemas/"+name, nil)
}

// componentName is the Go type's name, capitalised, with "Input" for the
// request form of a type whose name does not say so, and its package in
// front when another package took the name first.
func (g *schemaGen) componentName(key genKey) string {
	base := typeName(key.t)
	if b, ok := strings.CutSuffix(base, "Req"); ok {
		base = b + "Request"
	}
	if key.request && !strings.HasSuffix(base, "Request") && !strings.HasSuffix(base, "Input") {
		base += "Input"
	}
	name := base
	if _, clash := g.taken[name]; clash {
		pkg := key.t.PkgPath()
		name = exportName(pkg[strings.LastIndex(pkg, "/")+1:]) + base
	}
	for i := 2; ; i++ {
		if _, clash := g.taken[name]; !clash {
			return name
		}
		name = fmt.Sprintf("%s%d", base, i)
	}
}

func typeName(t reflect.Type) string {
	n := t.Name()
	if i := strings.IndexByte(n, '['); i >= 0 {
		// A generic instance: page[github.com/x/y.item] -> PageItem.
		inner := n[i+1 : len(n)-1]
		inner = inner[strings.LastIndexAny(inner, "./")+1:]
		n = n[:i] + exportName(inner)
	}
	// siteJSON -> Site: the suffix only tells Go readers it is a wire type.
	if b, ok := strings.CutSuffix(n, "JSON"); ok && b != "" {
		n = b
	}
	return exportName(n)
}

func exportName(n string) string {
	if n == "" {
		return n
	}
	r := []rune(n)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func (g *schemaGen) structSchema(t reflect.Type, request bool) *openapi3.Schema {
	s := &openapi3.Schema{Type: types("object"), Properties: openapi3.Schemas{}}
	no := false
	s.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
	g.addFields(s, t, request, false)
	return s
}

// addFields adds t's fields as encoding/json sees them: embedded structs
// without a name are flattened, "-" is skipped, ",string" is a string.
// Fields of a struct embedded by pointer are absent when it is nil.
func (g *schemaGen) addFields(s *openapi3.Schema, t reflect.Type, request, optional bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && g.special(et) == nil {
				g.addFields(s, et, request, optional || ft.Kind() == reflect.Pointer)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		var fs *openapi3.SchemaRef
		if strings.Contains(","+opts+",", ",string,") {
			fs = openapi3.NewSchemaRef("", &openapi3.Schema{Type: types("string")})
		} else {
			fs = g.schema(ft, request)
		}
		for _, o := range strings.Split(f.Tag.Get("openapi"), ",") {
			switch {
			case o == "nullable":
				// A nil slice or map the handler means (null: "every site").
				fs = nullable(fs)
			case strings.HasPrefix(o, "types="):
				// A value the handler decodes itself (any, json.RawMessage)
				// whose JSON types are known: "types=string|number|boolean".
				// On a map, the types of its values.
				ts := types(strings.Split(strings.TrimPrefix(o, "types="), "|")...)
				if ft.Kind() == reflect.Map {
					v := *fs.Value
					v.AdditionalProperties = openapi3.AdditionalProperties{Schema: openapi3.NewSchemaRef("", &openapi3.Schema{Type: ts})}
					fs = openapi3.NewSchemaRef("", &v)
				} else {
					fs = openapi3.NewSchemaRef("", &openapi3.Schema{Type: ts})
					if ts.Includes("object") {
						// Any members: said outright, as generated client
						// types otherwise take a bare object for an empty one.
						yes := true
						fs.Value.AdditionalProperties = openapi3.AdditionalProperties{Has: &yes}
					}
				}
			case strings.HasPrefix(o, "ref="):
				// Raw JSON the handler parses into a documented type.
				fs = openapi3.NewSchemaRef("#/components/schemas/"+strings.TrimPrefix(o, "ref="), nil)
			case strings.HasPrefix(o, "enum="):
				// A string field with a fixed set of values; on a list of
				// strings, the set of its items' values.
				var enum []any
				for _, e := range strings.Split(strings.TrimPrefix(o, "enum="), "|") {
					enum = append(enum, e)
				}
				v := *fs.Value
				if ft.Kind() == reflect.Slice && v.Items != nil && v.Items.Value != nil {
					items := *v.Items.Value
					items.Enum = enum
					v.Items = openapi3.NewSchemaRef("", &items)
				} else {
					v.Enum = append(v.Enum, enum...)
				}
				fs = openapi3.NewSchemaRef("", &v)
			}
		}
		if l, ok := parseLimit(f.Tag.Get(limitTag)); ok && request {
			// Enforced by decodeJSON (checkLimits).
			fs = applyLimit(fs, ft, l)
		}
		s.Properties[name] = fs
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if !request && !omit && !optional {
			s.Required = append(s.Required, name)
		}
	}
}
