package interceptors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// maxPatchCopyBytes bounds how much a patch's copy operations may grow a
// payload, so that a remote reply cannot balloon it.
const maxPatchCopyBytes = 8 << 20

// PatchOp is one RFC 6902 operation. Value is required by add, replace and
// test (JSON null is a value: json.RawMessage("null")); From by move and
// copy.
type PatchOp struct {
	// Op is add, remove, replace, move, copy or test.
	Op string `json:"op"`
	// Path is the JSON Pointer (RFC 6901) the operation applies to.
	Path string `json:"path"`
	// From is the JSON Pointer move and copy take from.
	From string `json:"from,omitempty"`
	// Value is the value of add, replace and test.
	Value json.RawMessage `json:"value,omitempty"`
}

// checkPatch validates the operations without a document: known op, JSON
// Pointer paths, value and from where the op needs them.
func checkPatch(ops []PatchOp) error {
	for i, op := range ops {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: patch op %d (%.20q %.60q): %s", ErrBadReply, i, op.Op, op.Path, fmt.Sprintf(format, args...))
		}
		if err := checkPointer(op.Path); err != nil {
			return bad("path: %v", err)
		}
		switch op.Op {
		case "add", "replace", "test":
			if len(op.Value) == 0 {
				return bad("no value")
			}
			if !json.Valid(op.Value) {
				return bad("value is not valid JSON")
			}
		case "move", "copy":
			if err := checkPointer(op.From); err != nil {
				return bad("from: %v", err)
			}
		case "remove":
		default:
			return bad("unknown op (want add, remove, replace, move, copy or test)")
		}
	}
	return nil
}

// checkPointer validates an RFC 6901 JSON Pointer: empty, or "/"-prefixed
// tokens where "~" is followed by 0 or 1.
func checkPointer(p string) error {
	if p != "" && p[0] != '/' {
		return fmt.Errorf("%.60q is not a JSON Pointer (must be empty or start with /)", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("%.60q has a bad escape (~ must be followed by 0 or 1)", p)
		}
	}
	return nil
}

// applyPatch applies ops to doc with standard RFC 6902 semantics (no
// negative array indices) and returns the new document. The error wraps
// ErrBadReply.
func applyPatch(doc json.RawMessage, ops []PatchOp) (json.RawMessage, error) {
	if len(ops) == 0 {
		return doc, nil
	}
	p := make(jsonpatch.Patch, len(ops))
	for i, op := range ops {
		o := jsonpatch.Operation{"op": rawString(op.Op), "path": rawString(op.Path)}
		if op.Op == "move" || op.Op == "copy" {
			o["from"] = rawString(op.From)
		}
		if op.Value != nil {
			v := op.Value
			o["value"] = &v
		}
		p[i] = o
	}
	opts := jsonpatch.NewApplyOptions()
	opts.SupportNegativeIndices = false
	opts.AccumulatedCopySizeLimit = maxPatchCopyBytes
	opts.EscapeHTML = false
	out, err := p.ApplyWithOptions(doc, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: patch does not apply: %v", ErrBadReply, err)
	}
	return out, nil
}

func rawString(s string) *json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	r := json.RawMessage(b)
	return &r
}

// Diff returns an RFC 6902 patch that turns from into to: add, remove and
// replace operations for object members (keys in sorted order), and one
// replace for any other value that differs (arrays are replaced whole).
// Both must be valid JSON; equal documents give an empty, non-nil patch.
func Diff(from, to json.RawMessage) ([]PatchOp, error) {
	ops := []PatchOp{}
	if err := diff(&ops, "", from, to); err != nil {
		return nil, err
	}
	return ops, nil
}

func diff(ops *[]PatchOp, path string, a, b json.RawMessage) error {
	if firstByte(a) == '{' && firstByte(b) == '{' {
		var ma, mb map[string]json.RawMessage
		if err := json.Unmarshal(a, &ma); err != nil {
			return fmt.Errorf("interceptors: diff: %w", err)
		}
		if err := json.Unmarshal(b, &mb); err != nil {
			return fmt.Errorf("interceptors: diff: %w", err)
		}
		both := maps.Clone(ma) // not nil: a is an object
		maps.Copy(both, mb)
		for _, k := range slices.Sorted(maps.Keys(both)) {
			va, inA := ma[k]
			vb, inB := mb[k]
			p := path + "/" + escapePointer(k)
			switch {
			case !inB:
				*ops = append(*ops, PatchOp{Op: "remove", Path: p})
			case !inA:
				v, err := compact(vb)
				if err != nil {
					return err
				}
				*ops = append(*ops, PatchOp{Op: "add", Path: p, Value: v})
			default:
				if err := diff(ops, p, va, vb); err != nil {
					return err
				}
			}
		}
		return nil
	}
	eq, err := jsonEqual(a, b)
	if err != nil || eq {
		return err
	}
	v, err := compact(b)
	if err != nil {
		return err
	}
	*ops = append(*ops, PatchOp{Op: "replace", Path: path, Value: v})
	return nil
}

func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func compact(v json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, fmt.Errorf("interceptors: diff: %w", err)
	}
	return buf.Bytes(), nil
}

// jsonEqual compares two JSON values structurally (numbers by their text).
func jsonEqual(a, b json.RawMessage) (bool, error) {
	if bytes.Equal(a, b) {
		return true, nil
	}
	va, err := decodeAny(a)
	if err != nil {
		return false, err
	}
	vb, err := decodeAny(b)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(va, vb), nil
}

func decodeAny(b json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("interceptors: diff: %w", err)
	}
	return v, nil
}
