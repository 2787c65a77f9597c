package api

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cairn-rmm/cairn"
)

// Request limits are declared once, on the request type's fields, with a
// `limit` struct tag, and read by both sides: decodeJSON refuses a body
// that breaks one (validation_failed naming the field, before the handler
// runs), and the API document states it (maxLength, minimum and maximum,
// maxItems), so the two cannot drift.
//
//	Name    string   `json:"name" limit:"max=100"`        // at most 100 characters
//	Port    int      `json:"port" limit:"min=1,max=65535"` // a value from 1 to 65535
//	Devices []string `json:"devices" limit:"max=500"`     // at most 500 entries
//
// On a string the bounds count characters (Unicode code points, as JSON
// Schema's maxLength does); on a number its value; on a list or object
// its entries. A domain validator may check more (a byte limit, a
// pattern); where it checks the same bound, the tag carries its number and
// the domain check stays for callers other than the API.
//
// Integers without a tag are bounded by their Go type (an int64 field
// refuses what does not fit): the document says so too (intBounds).
type fieldLimit struct {
	min, max *int64
	// itemMax bounds each string of a list ("itemmax=").
	itemMax *int64
}

const limitTag = "limit"

// parseLimit reads a `limit` tag ("min=1,max=100"); it panics on a
// malformed one, which the API document's generation (and so every API
// test) hits first.
func parseLimit(tag string) (fieldLimit, bool) {
	if tag == "" {
		return fieldLimit{}, false
	}
	var l fieldLimit
	for _, part := range strings.Split(tag, ",") {
		k, v, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			panic(fmt.Sprintf("api: malformed limit tag %q", tag))
		}
		switch k {
		case "min":
			l.min = &n
		case "max":
			l.max = &n
		case "itemmax":
			l.itemMax = &n
		default:
			panic(fmt.Sprintf("api: malformed limit tag %q", tag))
		}
	}
	return l, true
}

// applyLimit states l on a field's schema s (a copy is returned).
func applyLimit(s *openapi3.SchemaRef, ft reflect.Type, l fieldLimit) *openapi3.SchemaRef {
	if s.Value == nil {
		panic(fmt.Sprintf("api: a limit tag on %s, whose schema is a reference", ft))
	}
	v := *s.Value
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch {
	case ft.Kind() == reflect.String:
		if l.min != nil {
			v.MinLength = uint64(*l.min)
		}
		if l.max != nil {
			n := uint64(*l.max)
			v.MaxLength = &n
		}
	case isIntKind(ft.Kind()):
		if l.min != nil {
			v.Min = openapi3.Float64Ptr(float64(*l.min))
		}
		if l.max != nil {
			v.Max = openapi3.Float64Ptr(float64(*l.max))
		}
	case ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array:
		if l.min != nil {
			v.MinItems = uint64(*l.min)
		}
		if l.max != nil {
			n := uint64(*l.max)
			v.MaxItems = &n
		}
		if l.itemMax != nil {
			if ft.Elem().Kind() != reflect.String || v.Items == nil || v.Items.Value == nil {
				panic(fmt.Sprintf("api: itemmax on %s, which is not a list of strings", ft))
			}
			items := *v.Items.Value
			n := uint64(*l.itemMax)
			items.MaxLength = &n
			v.Items = openapi3.NewSchemaRef("", &items)
		}
	case ft.Kind() == reflect.Map:
		if l.min != nil {
			v.MinProps = uint64(*l.min)
		}
		if l.max != nil {
			n := uint64(*l.max)
			v.MaxProps = &n
		}
	default:
		panic(fmt.Sprintf("api: a limit tag on %s, which has no length or value bound", ft))
	}
	return openapi3.NewSchemaRef("", &v)
}

func isIntKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64
}

// intBounds are the values an integer of kind k holds: what decoding into
// it accepts.
func intBounds(k reflect.Kind) (lo, hi float64) {
	switch k {
	case reflect.Int8:
		return math.MinInt8, math.MaxInt8
	case reflect.Int16:
		return math.MinInt16, math.MaxInt16
	case reflect.Int32:
		return math.MinInt32, math.MaxInt32
	case reflect.Int, reflect.Int64:
		return math.MinInt64, math.MaxInt64
	case reflect.Uint8:
		return 0, math.MaxUint8
	case reflect.Uint16:
		return 0, math.MaxUint16
	case reflect.Uint32:
		return 0, math.MaxUint32
	}
	return 0, math.MaxUint64
}

// intFormat is the OpenAPI format of an integer of kind k.
func intFormat(k reflect.Kind) string {
	switch k {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return "int32"
	}
	return "int64"
}

// checkLimits reports every field of the decoded request v that breaks
// its `limit` tag, naming it as the client sent it ("targets.devices",
// "steps[2].name").
func checkLimits(v any) error {
	var out cairn.Validation
	walkLimits(reflect.ValueOf(v), "", &out)
	return out.Err()
}

func walkLimits(v reflect.Value, path string, out *cairn.Validation) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		if t == timeType {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			if f.Anonymous && name == "" {
				walkLimits(v.Field(i), path, out)
				continue
			}
			if name == "" {
				name = f.Name
			}
			fp := name
			if path != "" {
				fp = path + "." + name
			}
			if l, ok := parseLimit(f.Tag.Get(limitTag)); ok {
				checkLimit(v.Field(i), fp, l, out)
			}
			walkLimits(v.Field(i), fp, out)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			walkLimits(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			walkLimits(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key()), out)
		}
	}
}

func checkLimit(v reflect.Value, field string, l fieldLimit, out *cairn.Validation) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	var n int64
	var unit string
	switch {
	case v.Kind() == reflect.String:
		n, unit = int64(utf8.RuneCountInString(v.String())), "characters"
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		n = v.Int()
	case v.Kind() >= reflect.Uint && v.Kind() <= reflect.Uint64:
		if v.Uint() > math.MaxInt64 {
			n = math.MaxInt64
		} else {
			n = int64(v.Uint())
		}
	case v.Kind() == reflect.Slice || v.Kind() == reflect.Array || v.Kind() == reflect.Map:
		n, unit = int64(v.Len()), "entries"
	default:
		return
	}
	if l.itemMax != nil && v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
		for i := range v.Len() {
			if utf8.RuneCountInString(v.Index(i).String()) > int(*l.itemMax) {
				out.Add(fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("must be at most %d characters", *l.itemMax))
			}
		}
	}
	switch {
	case unit == "" && l.min != nil && l.max != nil && (n < *l.min || n > *l.max):
		out.Add(field, fmt.Sprintf("must be from %d to %d", *l.min, *l.max))
	case unit == "" && l.min != nil && n < *l.min:
		out.Add(field, fmt.Sprintf("must be at least %d", *l.min))
	case unit == "" && l.max != nil && n > *l.max:
		out.Add(field, fmt.Sprintf("must be at most %d", *l.max))
	case unit == "characters" && l.max != nil && n > *l.max:
		out.Add(field, fmt.Sprintf("must be at most %d characters", *l.max))
	case unit == "characters" && l.min != nil && n < *l.min:
		out.Add(field, fmt.Sprintf("must be at least %d characters", *l.min))
	case unit != "" && l.max != nil && n > *l.max:
		out.Add(field, fmt.Sprintf("must have at most %d %s", *l.max, unit))
	case unit != "" && l.min != nil && n < *l.min:
		out.Add(field, fmt.Sprintf("must have at least %d %s", *l.min, unit))
	}
}
