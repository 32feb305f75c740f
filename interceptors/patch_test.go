package interceptors

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"equal", `{"a":1}`, `{"a":1}`, `[]`},
		{"equal modulo layout", `{"a": [1, {"b":2}], "c":"x"}`, `{"c":"x","a":[1,{"b":2}]}`, `[]`},
		{"replace scalar", `{"a":1}`, `{"a":2}`, `[{"op":"replace","path":"/a","value":2}]`},
		{"add and remove", `{"a":1,"b":2}`, `{"b":2,"c":3}`, `[{"op":"remove","path":"/a"},{"op":"add","path":"/c","value":3}]`},
		{"nested", `{"call":{"name":"bash","arguments":{"cmd":"ls"}}}`, `{"call":{"name":"bash","arguments":{"cmd":"ls -la","cwd":"/"}}}`,
			`[{"op":"replace","path":"/call/arguments/cmd","value":"ls -la"},{"op":"add","path":"/call/arguments/cwd","value":"/"}]`},
		{"array replaced whole", `{"m":[1,2,3]}`, `{"m":[1,2]}`, `[{"op":"replace","path":"/m","value":[1,2]}]`},
		{"object to scalar", `{"a":{"b":1}}`, `{"a":null}`, `[{"op":"replace","path":"/a","value":null}]`},
		{"escaped keys", `{"a/b":1,"m~n":1}`, `{"a/b":2,"m~n":2}`, `[{"op":"replace","path":"/a~1b","value":2},{"op":"replace","path":"/m~0n","value":2}]`},
		{"root scalar", `1`, `2`, `[{"op":"replace","path":"","value":2}]`},
		{"root type change", `{"a":1}`, `[1]`, `[{"op":"replace","path":"","value":[1]}]`},
		{"value compacted", `{"a":1}`, `{"a":1, "b": { "x" : "<b>" }}`, `[{"op":"add","path":"/b","value":{"x":"\u003cb\u003e"}}]`},
		{"keys sorted", `{}`, `{"z":1,"a":2,"m":3}`, `[{"op":"add","path":"/a","value":2},{"op":"add","path":"/m","value":3},{"op":"add","path":"/z","value":1}]`},
	} {
		ops, err := Diff(json.RawMessage(tc.from), json.RawMessage(tc.to))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got, _ := json.Marshal(ops)
		if string(got) != tc.want {
			t.Errorf("%s: Diff = %s\nwant %s", tc.name, got, tc.want)
			continue
		}
		checkDiffApplies(t, tc.from, tc.to, ops)
	}
	if _, err := Diff(json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":`)); err == nil {
		t.Error("Diff of invalid JSON: no error")
	}
}

// checkDiffApplies checks that the patch turns from into to.
func checkDiffApplies(t *testing.T, from, to string, ops []PatchOp) {
	t.Helper()
	if firstByte([]byte(from)) != '{' && firstByte([]byte(from)) != '[' {
		return // json-patch applies to containers only
	}
	got, err := applyPatch(json.RawMessage(from), ops)
	if err != nil {
		t.Fatalf("applying the diff of %s -> %s: %v", from, to, err)
	}
	if eq, err := jsonEqual(got, json.RawMessage(to)); err != nil || !eq {
		t.Fatalf("diff of %s -> %s applied gives %s", from, to, got)
	}
}

func FuzzDiff(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":[1,2]}}`, `{"b":{"c":[2],"d":"x"},"e":null}`)
	f.Add(`{"a/b~":{"x":1}}`, `{"a/b~":{"x":2,"y":{}}}`)
	f.Fuzz(func(t *testing.T, from, to string) {
		if !json.Valid([]byte(from)) || !json.Valid([]byte(to)) || firstByte([]byte(from)) != '{' || firstByte([]byte(to)) != '{' {
			return
		}
		ops, err := Diff(json.RawMessage(from), json.RawMessage(to))
		if err != nil {
			if strings.Contains(err.Error(), "invalid UTF-8") {
				return
			}
			t.Fatalf("Diff(%s, %s): %v", from, to, err)
		}
		if checkPatch(ops) != nil {
			t.Fatalf("Diff made an invalid patch %+v", ops)
		}
		checkDiffApplies(t, from, to, ops)
	})
}

func TestApplyPatch(t *testing.T) {
	doc := json.RawMessage(`{"a":[1,2,3],"s":"<x>"}`)
	for _, tc := range []struct {
		name string
		ops  []PatchOp
		want string // "" = error
	}{
		{"none", nil, `{"a":[1,2,3],"s":"<x>"}`},
		{"append", []PatchOp{{Op: "add", Path: "/a/-", Value: json.RawMessage(`4`)}}, `{"a":[1,2,3,4],"s":"<x>"}`},
		{"move", []PatchOp{{Op: "move", From: "/s", Path: "/t"}}, `{"a":[1,2,3],"t":"<x>"}`},
		{"copy", []PatchOp{{Op: "copy", From: "/s", Path: "/t"}}, `{"a":[1,2,3],"s":"<x>","t":"<x>"}`},
		{"test passes", []PatchOp{{Op: "test", Path: "/s", Value: json.RawMessage(`"<x>"`)}, {Op: "remove", Path: "/a"}}, `{"s":"<x>"}`},
		{"test fails", []PatchOp{{Op: "test", Path: "/s", Value: json.RawMessage(`"y"`)}}, ""},
		{"missing path", []PatchOp{{Op: "replace", Path: "/nope", Value: json.RawMessage(`1`)}}, ""},
		{"negative index", []PatchOp{{Op: "remove", Path: "/a/-1"}}, ""},
		{"index out of range", []PatchOp{{Op: "remove", Path: "/a/9"}}, ""},
	} {
		got, err := applyPatch(doc, tc.ops)
		if tc.want == "" {
			if !errors.Is(err, ErrBadReply) {
				t.Errorf("%s: %s, %v; want ErrBadReply", tc.name, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if eq, _ := jsonEqual(got, json.RawMessage(tc.want)); !eq {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
