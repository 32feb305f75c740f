package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/invopop/jsonschema"
)

// OutDir is where the schemas go, relative to the repository's root.
const OutDir = "docs/schema"

// modulePath is the module the Go sources belong to.
const modulePath = "github.com/hookbus/hookbus"

// suffix ends the name of every generated file.
const suffix = ".schema.json"

func isGenerated(name string) bool { return strings.HasSuffix(name, suffix) }

// Generate returns the schema files by path relative to OutDir. root is
// the repository's root, whose Go sources give the descriptions.
func Generate(root string) (map[string][]byte, error) {
	docs, err := readComments(root, modulePath, "events", "interceptors")
	if err != nil {
		return nil, fmt.Errorf("read doc comments: %w", err)
	}
	g := &gen{docs: docs}
	schemas := make(map[string]*jsonschema.Schema)
	for _, st := range events.Stages() {
		p, err := events.PayloadFor(st)
		if err != nil {
			return nil, err
		}
		s := g.reflect(p)
		s.Title = "hookbus " + string(st) + " payload"
		s.Description = fmt.Sprintf("%s It is the data of CloudEvent type %s.", s.Description, st.Type())
		if st.Interceptable() {
			s.Description += fmt.Sprintf(" Interceptors on %s may answer %s.", st, st.Accepts())
		}
		schemas[PayloadFile(st)] = s
	}
	for file, v := range map[string]any{
		DecisionFile:     &interceptors.Decision{},
		RunRequestFile:   &events.RunRequest{},
		WakeFile:         &events.Wake{},
		RegistrationFile: &interceptors.Registration{},
	} {
		s := g.reflect(v)
		s.Title = "hookbus " + s.Title
		schemas[file] = s
	}
	schemas[CloudEventFile] = envelope()
	schemas[EventHeadersFile] = eventHeaders()
	schemas[RequestHeadersFile] = requestHeaders()
	schemas[BundleFile] = g.bundle(schemas)

	out := make(map[string][]byte, len(schemas))
	for name, s := range schemas {
		b, err := marshal(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// The generated files, relative to OutDir.
const (
	DecisionFile       = "decision" + suffix
	RunRequestFile     = "run-request" + suffix
	WakeFile           = "wake" + suffix
	RegistrationFile   = "registration" + suffix
	CloudEventFile     = "cloudevent" + suffix
	EventHeadersFile   = "event-headers" + suffix
	RequestHeadersFile = "request-headers" + suffix
	BundleFile         = "hookbus" + suffix
)

// PayloadFile is the file of a stage's payload schema.
func PayloadFile(st events.Stage) string { return "payloads/" + string(st) + suffix }

// marshal writes s as indented JSON with a final newline, without HTML
// escaping (descriptions hold "<" and ">").
func marshal(s *jsonschema.Schema) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gen reflects Go types into schemas.
type gen struct {
	docs comments
	// used collects the named types (named) the current reflection met.
	used map[string]bool
}

// reflect returns the schema of v's type: the type itself at the root,
// every type it uses in $defs.
func (g *gen) reflect(v any) *jsonschema.Schema {
	g.used = make(map[string]bool)
	r := &jsonschema.Reflector{
		Anonymous:                 true, // no $id: files refer to each other by relative paths
		AllowAdditionalProperties: true, // readers ignore fields they do not know: fields are added within v1
		ExpandedStruct:            true,
		Mapper:                    g.mapType,
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" {
				return g.docs.typeDoc(t)
			}
			return g.docs.fieldDoc(t, field)
		},
	}
	t := reflect.TypeOf(v)
	s := r.Reflect(v)
	s.Title = t.Elem().Name()
	if s.Definitions == nil {
		s.Definitions = jsonschema.Definitions{}
	}
	for name := range g.used {
		s.Definitions[name] = g.namedDef(name)
	}
	adjust(t.Elem().Name(), s)
	for name, d := range s.Definitions {
		adjust(name, d)
	}
	g.complete(s)
	return s
}

// complete makes s's definitions those its references need: the extra
// definitions an adjustment refers to are added, the definitions nothing
// refers to any more removed.
func (g *gen) complete(s *jsonschema.Schema) {
	for {
		defs := s.Definitions
		s.Definitions = nil
		refs := references(s)
		for _, d := range defs {
			for r := range references(d) {
				refs[r] = true
			}
		}
		s.Definitions = defs
		changed := false
		for name := range refs {
			if _, ok := defs[name]; !ok {
				defs[name] = g.extraDef(name)
				changed = true
			}
		}
		for name := range defs {
			if !refs[name] {
				delete(defs, name)
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	if len(s.Definitions) == 0 {
		s.Definitions = nil
	}
}

// sub is the schema of v's type as a definition of another schema.
func (g *gen) sub(v any) *jsonschema.Schema {
	s := (&gen{docs: g.docs}).reflect(v)
	s.Version, s.Title, s.Definitions = "", "", nil
	return s
}

// references returns the names of the definitions s refers to.
func references(s *jsonschema.Schema) map[string]bool {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	out := make(map[string]bool)
	for _, m := range refPattern.FindAllSubmatch(b, -1) {
		out[string(m[1])] = true
	}
	return out
}

var refPattern = regexp.MustCompile(`"\$ref":"#/\$defs/([A-Za-z0-9_]+)"`)

// extraDef is a definition that no Go field's type gives, but an
// adjustment refers to.
func (g *gen) extraDef(name string) *jsonschema.Schema {
	switch name {
	case "InterceptableStage":
		return &jsonschema.Schema{Type: "string", Enum: anys(strs(events.InterceptableStages())),
			Description: "A stage that accepts intercepting hooks; the others are observe-only."}
	case "MockResult":
		return g.sub(&interceptors.MockResult{})
	case "PatchOp":
		return g.sub(&interceptors.PatchOp{})
	}
	if _, ok := namedByName(name); ok {
		return g.namedDef(name)
	}
	panic("schemagen: no definition " + name)
}

// named are the string types whose values are a closed set: an enum each,
// from events' and interceptors' tables and constants.
var named = map[reflect.Type]func() []string{
	reflect.TypeFor[events.Stage]():      func() []string { return strs(events.Stages()) },
	reflect.TypeFor[events.ActionKind](): func() []string { return strs(events.ActionKinds()) },
	reflect.TypeFor[interceptors.Kind](): events.AllDecisions.Names,
	reflect.TypeFor[events.Role](): func() []string {
		return strs([]events.Role{events.RoleSystem, events.RoleUser, events.RoleAssistant, events.RoleTool})
	},
	reflect.TypeFor[interceptors.Policy](): func() []string {
		return strs([]interceptors.Policy{interceptors.PolicyIgnore, interceptors.PolicyFail})
	},
	reflect.TypeFor[interceptors.Mode](): func() []string {
		return strs([]interceptors.Mode{interceptors.ModeMutate, interceptors.ModeValidate, interceptors.ModeShadow})
	},
}

func strs[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}

// mapType gives the named types a reference to their definition.
func (g *gen) mapType(t reflect.Type) *jsonschema.Schema {
	if _, ok := named[t]; !ok {
		return nil
	}
	g.used[t.Name()] = true
	return &jsonschema.Schema{Ref: "#/$defs/" + t.Name()}
}

// namedDef is the definition of a named type.
func (g *gen) namedDef(name string) *jsonschema.Schema {
	t, ok := namedByName(name)
	if !ok {
		panic("schemagen: no named type " + name)
	}
	return &jsonschema.Schema{Type: "string", Enum: anys(named[t]()), Description: g.docs.typeDoc(t)}
}

func namedByName(name string) (reflect.Type, bool) {
	for t := range named {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

func anys(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

// bundle is every definition of the other schemas in one file, with the
// tables of stages: the source of the TypeScript SDK's types
// (sdk/typescript/src/schema.ts).
func (g *gen) bundle(schemas map[string]*jsonschema.Schema) *jsonschema.Schema {
	defs := jsonschema.Definitions{}
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		s := schemas[name]
		maps.Copy(defs, s.Definitions)
		root := *s
		root.Definitions, root.Version = nil, ""
		key := strings.TrimPrefix(root.Title, "hookbus ")
		if p, ok := strings.CutSuffix(name, suffix); ok && strings.HasPrefix(p, "payloads/") {
			key = payloadName(events.Stage(strings.TrimPrefix(p, "payloads/")))
		}
		root.Title = key
		defs[key] = retarget(&root)
	}
	stages := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties(),
		Description: "The payload type of each stage: the data of its events and of its interception requests."}
	accepts := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties(),
		Description: "The decisions each interceptable stage accepts."}
	for _, st := range events.Stages() {
		stages.Properties.Set(string(st), &jsonschema.Schema{Ref: "#/$defs/" + payloadName(st)})
		stages.Required = append(stages.Required, string(st))
		if st.Interceptable() {
			accepts.Properties.Set(string(st), &jsonschema.Schema{Type: "string", Enum: anys(st.Accepts().Names())})
			accepts.Required = append(accepts.Required, string(st))
		}
	}
	defs["StagePayloads"] = stages
	defs["StageDecisions"] = accepts
	defs["InterceptableStage"] = g.extraDef("InterceptableStage")
	var privileged, toolMatched []string
	for _, st := range events.Stages() {
		if st.Privileged() {
			privileged = append(privileged, string(st))
		}
		if interceptors.ToolMatched(st) {
			toolMatched = append(toolMatched, string(st))
		}
	}
	defs["PrivilegedStage"] = &jsonschema.Schema{Type: "string", Enum: anys(privileged),
		Description: "A stage that accepts only trusted interceptors: built-in ones, and plugins granted privileged_hooks (KV bucket hookbus_trust)."}
	defs["ToolMatchedStage"] = &jsonschema.Schema{Type: "string", Enum: anys(toolMatched),
		Description: "A stage whose registrations may narrow themselves to tools (tools): the tool's name, or on subagent.before the called agent's id."}
	return &jsonschema.Schema{
		Version: jsonschema.Version,
		Title:   "hookbus",
		Description: "Every type of hookbus' wire protocol v1 in one file (docs/PROTOCOL.md): the other files of docs/schema, " +
			"each under its Go type's name, and the tables of stages. It validates nothing itself.",
		Definitions: defs,
	}
}

// retarget points the references of a file's root schema, made for files
// of their own, at the bundle's definitions: the envelope's payload
// references ("payloads/tool.before.schema.json") become "#/$defs/ToolBefore".
func retarget(s *jsonschema.Schema) *jsonschema.Schema {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	for _, st := range events.Stages() {
		b = bytes.ReplaceAll(b, []byte(`"`+PayloadFile(st)+`"`), []byte(`"#/$defs/`+payloadName(st)+`"`))
	}
	var out jsonschema.Schema
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return &out
}

// payloadName is the name of st's payload type: its definition's name in
// the bundle.
func payloadName(st events.Stage) string {
	return reflect.TypeOf(must(events.PayloadFor(st))).Elem().Name()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
