package audit

import (
	"encoding/json"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// patchOp is one RFC 6902 operation as hook.decided records it.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// changes sets the Changes of the hooks' patches, applying them in order
// to before (the payload the first hook was given; nil when the stream
// does not record it).
func changes(hs []*HookCall, before []byte) {
	doc := before
	for _, h := range hs {
		if len(h.Patch) == 0 {
			continue
		}
		var ops []patchOp
		if json.Unmarshal(h.Patch, &ops) != nil {
			doc = nil
			continue
		}
		var root any
		known := doc != nil && json.Unmarshal(doc, &root) == nil
		h.Changes = make([]Change, 0, len(ops))
		for _, op := range ops {
			c := Change{Op: op.Op, Path: op.Path, From: op.From}
			switch op.Op {
			case "add", "replace", "test":
				c.After = op.Value
			case "copy", "move":
				if known {
					c.After = pointer(root, op.From)
				}
			}
			if known {
				// nil for an add of a member that was absent
				c.Before, c.BeforeKnown = pointer(root, op.Path), true
			}
			if op.Op != "test" {
				h.Changes = append(h.Changes, c)
			}
			if known && op.Op != "test" {
				// the patch's later operations see the document changed
				if next, err := applyOps(doc, []patchOp{op}); err == nil {
					doc = next
					known = json.Unmarshal(doc, &root) == nil
				} else {
					known = false
				}
			}
		}
		if !known {
			doc = nil
		}
	}
}

func applyOps(doc []byte, ops []patchOp) ([]byte, error) {
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

// pointer is the value at an RFC 6901 pointer in v, nil when absent.
func pointer(v any, ptr string) json.RawMessage {
	if ptr != "" {
		if !strings.HasPrefix(ptr, "/") {
			return nil
		}
		for _, tok := range strings.Split(ptr[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch x := v.(type) {
			case map[string]any:
				var ok bool
				if v, ok = x[tok]; !ok {
					return nil
				}
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(x) {
					return nil
				}
				v = x[i]
			default:
				return nil
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
