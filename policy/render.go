package policy

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// jsonValueType is what a mutation's value is converted to, to read it
// as JSON.
var jsonValueType = reflect.TypeFor[*structpb.Value]()

// toJSON is a CEL value as JSON.
func toJSON(v ref.Val) ([]byte, error) {
	n, err := v.ConvertToNative(jsonValueType)
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(n.(*structpb.Value))
}

// Rendering bounds for explain's values.
const (
	renderString = 80 // characters of a string
	renderItems  = 5  // items of a list or map
)

// render writes a value short: strings quoted and cut, lists and maps
// to their first items and their size.
func render(v ref.Val) string {
	switch x := v.(type) {
	case types.String:
		return strconv.Quote(short(string(x), renderString))
	case types.Bool, types.Int, types.Uint, types.Double, types.Duration, types.Timestamp:
		return fmt.Sprint(x.Value())
	case types.Null:
		return "null"
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		var parts []string
		for i := types.Int(0); i < n && i < renderItems; i++ {
			parts = append(parts, render(x.Get(i)))
		}
		if int(n) > renderItems {
			parts = append(parts, fmt.Sprintf("… %d in all", n))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case traits.Mapper:
		n, _ := x.Size().(types.Int)
		var parts []string
		it := x.Iterator()
		for i := 0; it.HasNext() == types.True && i < renderItems; i++ {
			k := it.Next()
			parts = append(parts, render(k)+": "+render(x.Get(k)))
		}
		if int(n) > renderItems {
			parts = append(parts, fmt.Sprintf("… %d in all", n))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if b, err := toJSON(v); err == nil {
		return short(string(b), renderString)
	}
	return short(fmt.Sprint(v.Value()), renderString)
}

// short cuts s to n characters, marking the cut.
func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
