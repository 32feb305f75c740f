package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// DecodeHandler reads a handler's JSON object (Handler.Raw) into v, a
// pointer to a struct with the fields handlers of type typ have, as a hook
// type's Factory does: a field v lacks is refused, the error naming it and
// the fields hookbus reads (v's JSON names, in order), and so is an object
// whose "type" is another than typ (one without "type" is taken as typ).
func DecodeHandler(raw json.RawMessage, typ string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s handler: %v (hookbus reads %s)", typ, err, strings.Join(jsonNames(v), ", "))
	}
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &t) // it decoded above
	if t.Type != "" && t.Type != typ {
		return fmt.Errorf("handler of type %q, not %s", t.Type, typ)
	}
	return nil
}

// jsonNames lists the JSON names of the fields of the struct v points to.
func jsonNames(v any) []string {
	rt := reflect.TypeOf(v).Elem()
	var names []string
	for f := range rt.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
}
