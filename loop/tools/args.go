package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// decodeArgs decodes a tool's JSON arguments into v strictly: a field v
// does not have is an error, as is anything after the object. Every error
// wraps ErrArguments and names the tool.
func decodeArgs(tool string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return fmt.Errorf("%w: %s: %q must be %s, not a JSON %s", ErrArguments, tool, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		case errors.As(err, &te):
			return fmt.Errorf("%w: %s: the arguments must be a JSON object, not a JSON %s", ErrArguments, tool, te.Value)
		case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: %s: the arguments are not valid JSON: %v", ErrArguments, tool, err)
		}
		return fmt.Errorf("%w: %s: %s", ErrArguments, tool, strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: %s: unexpected data after the arguments object", ErrArguments, tool)
	}
	return nil
}

// jsonKind names a Go kind the way a JSON Schema would.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32":
		return "an integer"
	case "float64":
		return "a number"
	default:
		return "a " + kind
	}
}

// missing is the error of a required field that is absent.
func missing(tool, field string) error {
	return fmt.Errorf("%w: %s: %q is required", ErrArguments, tool, field)
}

// intField is an optional integer argument, for nonNegative.
type intField struct {
	name string
	v    *int
}

// nonNegative checks a tool's optional integer arguments, in order.
func nonNegative(tool string, fields ...intField) error {
	for _, f := range fields {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("%w: %s: %q must not be negative, got %d", ErrArguments, tool, f.name, *f.v)
		}
	}
	return nil
}
