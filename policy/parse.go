package policy

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookbus/hookbus/events"
)

// Policy is one policy document as written and as decoded.
type Policy struct {
	// Name is the policy's id (events.ValidateID).
	Name string
	// Version is "sha256:" and the first 16 hex digits of the digest of
	// the document's canonical form (its decoded fields as JSON): the same
	// policy written with other spacing or comments has the same version.
	Version string
	// Source is the document as written.
	Source []byte
	// Spec is the document decoded, defaults applied.
	Spec Spec

	file string     // the file name errors start with
	root *yaml.Node // the document's mapping, lines counted in the file
	doc  chunk      // the document's text, where its expressions are found (posOf)
}

// document is a policy document's YAML form.
type document struct {
	Name string `yaml:"name" json:"name"`
	Spec `yaml:",inline" json:",inline"`
}

// Parse reads a policy file: one or more YAML documents separated by
// "---", one policy each. It checks everything but the expressions (those
// Compile checks): known keys only, a valid name, mode, rollout, failure
// policy, stages, globs, actions and counters, names unique within the
// document. Errors wrap ErrInvalid and start "filename:line:column:".
func Parse(filename string, src []byte) ([]*Policy, error) {
	var out []*Policy
	seen := map[string]int{}
	for _, ch := range splitDocuments(src) {
		p, err := parseDocument(filename, ch)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		if line, dup := seen[p.Name]; dup {
			return nil, fmt.Errorf("%w: %s:%d:1: policy %q is defined twice in the file (first at line %d)",
				ErrInvalid, filename, ch.line, p.Name, line)
		}
		seen[p.Name] = ch.line
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no policy document in the file", ErrInvalid, filename)
	}
	return out, nil
}

// chunk is one document's text and the file line it starts on.
type chunk struct {
	text []byte
	line int // 1-based line of text's first line in the file
}

// splitDocuments cuts src at lines starting "---" (and ends at "...").
func splitDocuments(src []byte) []chunk {
	var out []chunk
	cur := chunk{line: 1}
	lines := bytes.SplitAfter(src, []byte("\n"))
	for i, l := range lines {
		t := bytes.TrimRight(l, "\r\n")
		if isMarker(t, "---") || isMarker(t, "...") {
			out = append(out, cur)
			cur = chunk{line: i + 2}
			continue
		}
		cur.text = append(cur.text, l...)
	}
	return append(out, cur)
}

func isMarker(line []byte, m string) bool {
	rest, ok := bytes.CutPrefix(line, []byte(m))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// yamlLineRE finds the line numbers yaml.v3 puts in its messages.
var yamlLineRE = regexp.MustCompile(`line (\d+)`)

func parseDocument(file string, ch chunk) (*Policy, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(ch.text, &node); err != nil {
		return nil, yamlError(file, ch.line, err)
	}
	if node.Kind == 0 || len(node.Content) == 0 { // only comments or nothing
		return nil, nil
	}
	shift(&node, ch.line-1)
	root := node.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: %s:%d:%d: a policy document is a mapping (name:, match:, validations:, ...)", ErrInvalid, file, root.Line, root.Column)
	}
	p := &Policy{Source: bytes.TrimSpace(ch.text), file: file, root: root, doc: ch}
	p.Source = append(p.Source, '\n')
	if err := checkKeys(file, root, documentKeys, ""); err != nil {
		return nil, err
	}
	var doc document
	if err := root.Decode(&doc); err != nil {
		return nil, yamlError(file, 0, err)
	}
	p.Name, p.Spec = doc.Name, doc.Spec
	if err := p.check(); err != nil {
		return nil, err
	}
	canon, _ := json.Marshal(document{Name: p.Name, Spec: p.Spec}) // plain values always marshal
	sum := sha256.Sum256(canon)
	p.Version = "sha256:" + hex.EncodeToString(sum[:8])
	return p, nil
}

// yamlError says err (yaml.v3's, its lines counted from the document) at
// its place in the file.
func yamlError(file string, firstLine int, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0] // "line 2: cannot unmarshal ..."
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		// Each line number counted in the file.
		msg = yamlLineRE.ReplaceAllStringFunc(msg, func(s string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(s, "line "))
			if firstLine > 0 {
				n += firstLine - 1
			}
			return "line " + strconv.Itoa(n)
		})
		line, _ := strconv.Atoi(yamlLineRE.FindStringSubmatch(msg)[1])
		msg = strings.TrimPrefix(msg, "line "+strconv.Itoa(line)+": ")
		return fmt.Errorf("%w: %s:%d:1: %s", ErrInvalid, file, line, msg)
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalid, file, msg)
}

// shift adds n to the line of node and everything under it.
func shift(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shift(c, by)
	}
}

// keys are the keys a mapping may hold, with those of its values.
type keys struct {
	names map[string]*keys // nil: a scalar or a list of scalars
	list  *keys            // for a list of mappings: its items' keys
}

var (
	ruleKeys     = &keys{names: map[string]*keys{"name": nil, "expression": nil}}
	documentKeys = &keys{names: map[string]*keys{
		"name": nil, "mode": nil, "rollout": nil, "order": nil, "failurePolicy": nil,
		"match":           {names: map[string]*keys{"stages": nil, "agents": nil, "harnesses": nil, "kinds": nil, "tools": nil}},
		"matchConditions": {list: ruleKeys},
		"variables":       {list: ruleKeys},
		"counters":        {list: &keys{names: map[string]*keys{"name": nil, "key": nil, "value": nil, "window": nil}}},
		"validations": {list: &keys{names: map[string]*keys{"name": nil, "expression": nil, "message": nil,
			"messageExpression": nil, "reason": nil, "action": nil}}},
		"mutations": {list: ruleKeys},
	}}
)

// checkKeys refuses a key k does not name (a strict decode that says
// where).
func checkKeys(file string, n *yaml.Node, k *keys, where string) error {
	switch {
	case k == nil:
		return nil
	case k.list != nil:
		if n.Kind != yaml.SequenceNode {
			return nil // Decode says what is wrong
		}
		for i, item := range n.Content {
			if err := checkKeys(file, item, k.list, fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		sub, ok := k.names[key.Value]
		if !ok {
			return fmt.Errorf("%w: %s:%d:%d: unknown key %q in %s (known: %s)",
				ErrInvalid, file, key.Line, key.Column, key.Value, cmp.Or(where, "the policy"), k.known())
		}
		if err := checkKeys(file, n.Content[i+1], sub, strings.TrimPrefix(where+"."+key.Value, ".")); err != nil {
			return err
		}
	}
	return nil
}

func (k *keys) known() string {
	return strings.Join(slices.Sorted(maps.Keys(k.names)), ", ")
}

// errAt is an ErrInvalid error at the node under path in p's document (at
// the document's start when there is none).
func (p *Policy) errAt(path string, format string, args ...any) error {
	line, col := 1, 1
	if p.root != nil {
		line, col = p.root.Line, p.root.Column
	}
	// The node at path, or the nearest one above it that is written.
	for at := path; at != ""; {
		if n := p.node(at); n != nil {
			line, col = n.Line, n.Column
			break
		}
		i := strings.LastIndex(at, ".")
		if i < 0 {
			break
		}
		at = at[:i]
	}
	who := "policy " + p.Name
	if p.Name == "" {
		who = "policy"
	}
	return fmt.Errorf("%w: %s:%d:%d: %s: %s", ErrInvalid, p.file, line, col, who, fmt.Sprintf(format, args...))
}

// node finds the value under a dotted path ("validations.2.expression")
// in p's document.
func (p *Policy) node(path string) *yaml.Node {
	n := p.root
	for _, part := range strings.Split(path, ".") {
		if n == nil {
			return nil
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					next = n.Content[i+1]
				}
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}

// check validates the fields that are not expressions and applies the
// defaults.
func (p *Policy) check() error {
	s := &p.Spec
	if err := events.ValidateID("policy", p.Name); err != nil {
		return p.errAt("name", "%v", err)
	}
	switch s.Mode {
	case "":
		s.Mode = ModeEnforce
	case ModeEnforce, ModeWarn, ModeAudit:
	default:
		return p.errAt("mode", "mode %q (want %s, %s or %s)", s.Mode, ModeEnforce, ModeWarn, ModeAudit)
	}
	if p.node("rollout") == nil {
		s.Rollout = DefaultRollout
	} else if s.Rollout < 0 || s.Rollout > 100 {
		return p.errAt("rollout", "rollout %d is not a percentage (0 to 100)", s.Rollout)
	}
	switch s.FailurePolicy {
	case "":
		s.FailurePolicy = DefaultFailurePolicy
	case "ignore", "fail":
	default:
		return p.errAt("failurePolicy", "failurePolicy %q (want ignore or fail)", s.FailurePolicy)
	}
	if err := p.checkMatch(); err != nil {
		return err
	}
	names := defined{}
	if err := p.checkInputs(names); err != nil {
		return err
	}
	if err := p.checkRules(names); err != nil {
		return err
	}
	if len(s.Validations) == 0 && len(s.Mutations) == 0 {
		return p.errAt("", "no validations and no mutations: the policy would do nothing")
	}
	return nil
}

// defined are the names a policy defines, by kind: each is defined once.
type defined map[string]string

// add defines kind's name at path: a valid id, readable in CEL where it is
// read there, and not defined before.
func (names defined) add(p *Policy, kind, path, name string) error {
	if err := events.ValidateID(kind, name); err != nil {
		return p.errAt(path, "%v", err)
	}
	if strings.ContainsAny(name, "-.") && (kind == "variable" || kind == "counter") {
		return p.errAt(path, "%s name %q is read in CEL as %ss.%s: use letters, digits and _ only", kind, name, kind, name)
	}
	key := kind + ":" + name
	if _, dup := names[key]; dup {
		return p.errAt(path, "%s %q is defined twice", kind, name)
	}
	names[key] = path
	return nil
}

// checkInputs validates what the rules read (match conditions, variables
// and counters) and applies their defaults.
func (p *Policy) checkInputs(names defined) error {
	s := &p.Spec
	for i := range s.MatchConditions {
		c := &s.MatchConditions[i]
		if err := p.rule(names, "matchCondition", fmt.Sprintf("matchConditions.%d", i), &c.Name, fmt.Sprintf("condition-%d", i+1), c.Expression); err != nil {
			return err
		}
	}
	for i, v := range s.Variables {
		at := fmt.Sprintf("variables.%d", i)
		if err := p.need(at, "name", v.Name); err != nil {
			return err
		}
		if err := names.add(p, "variable", at+".name", v.Name); err != nil {
			return err
		}
		if err := p.need(at, "expression", v.Expression); err != nil {
			return err
		}
	}
	for i := range s.Counters {
		c := &s.Counters[i]
		at := fmt.Sprintf("counters.%d", i)
		if err := p.need(at, "name", c.Name); err != nil {
			return err
		}
		if err := names.add(p, "counter", at+".name", c.Name); err != nil {
			return err
		}
		if err := p.need(at, "key", c.Key); err != nil {
			return err
		}
		c.Value = cmp.Or(c.Value, "1")
		if c.Window <= 0 {
			return p.errAt(at, "counter %s needs a positive window (a Go duration: \"1h\", \"24h\")", c.Name)
		}
	}
	return nil
}

// checkRules validates the validations and mutations against the stages
// the policy matches, and applies their defaults.
func (p *Policy) checkRules(names defined) error {
	s := &p.Spec
	for i := range s.Validations {
		v := &s.Validations[i]
		at := fmt.Sprintf("validations.%d", i)
		if err := p.rule(names, "rule", at, &v.Name, fmt.Sprintf("validation-%d", i+1), v.Expression); err != nil {
			return err
		}
		switch v.Action {
		case "":
			v.Action = ActionDeny
		case ActionDeny, ActionAsk, ActionWarn:
		default:
			return p.errAt(at+".action", "action %q (want %s, %s or %s)", v.Action, ActionDeny, ActionAsk, ActionWarn)
		}
		for _, st := range s.Match.Stages {
			acc := st.Accepts()
			switch {
			case v.Action == ActionAsk && !acc.Has(events.DecisionAsk):
				return p.errAt(at+".action", "action ask needs stages that accept ask (%s accepts %s)", st, acc)
			case v.Action == ActionDeny && !acc.Has(events.DecisionDeny) && !acc.Has(events.DecisionStop):
				return p.errAt(at+".action", "action deny needs stages that accept deny or stop (%s accepts %s): use action warn", st, acc)
			}
		}
	}
	for i := range s.Mutations {
		m := &s.Mutations[i]
		at := fmt.Sprintf("mutations.%d", i)
		if err := p.rule(names, "rule", at, &m.Name, fmt.Sprintf("mutation-%d", i+1), m.Expression); err != nil {
			return err
		}
		for _, st := range s.Match.Stages {
			if !st.Accepts().Has(events.DecisionModify) {
				return p.errAt(at, "mutations need stages that accept modify (%s accepts %s)", st, st.Accepts())
			}
		}
	}
	return nil
}

// rule checks the rule at path at: its name (dflt when it has none),
// defined once as kind, and its expression, which it requires.
func (p *Policy) rule(names defined, kind, at string, name *string, dflt, expression string) error {
	if *name == "" {
		*name = dflt
	}
	if err := names.add(p, kind, at, *name); err != nil {
		return err
	}
	return p.need(at, "expression", expression)
}

// need refuses an empty required field.
func (p *Policy) need(at, field, value string) error {
	if strings.TrimSpace(value) == "" {
		return p.errAt(at, "%s is required", field)
	}
	return nil
}

// checkMatch checks the match block and defaults its stages.
func (p *Policy) checkMatch() error {
	m := &p.Spec.Match
	if len(m.Stages) == 0 {
		m.Stages = []events.Stage{events.StageToolBefore}
	}
	tools := false
	for i, st := range m.Stages {
		at := fmt.Sprintf("match.stages.%d", i)
		switch {
		case !st.Valid():
			return p.errAt(at, "stage %q is not a hookbus stage", st)
		case !st.Interceptable():
			return p.errAt(at, "stage %s is observe-only: a policy decides on stages that accept decisions", st)
		}
		if slices.Contains(m.Stages[:i], st) {
			return p.errAt(at, "stage %s is listed twice", st)
		}
		if st == events.StageToolBefore || st == events.StageToolAfter {
			tools = true
		}
	}
	if !tools && (len(m.Kinds) > 0 || len(m.Tools) > 0) {
		return p.errAt("match", "kinds and tools match tool calls: they need stage tool.before or tool.after")
	}
	for _, f := range []struct {
		field string
		list  []string
	}{{"agents", m.Agents}, {"harnesses", m.Harnesses}, {"kinds", m.Kinds}, {"tools", m.Tools}} {
		field := f.field
		for i, g := range f.list {
			if _, err := compileGlob(g); err != nil {
				return p.errAt(fmt.Sprintf("match.%s.%d", field, i), "%s: %v", field, err)
			}
		}
	}
	for i, k := range m.Kinds {
		if !kindGlobMatchesAny(k) {
			return p.errAt(fmt.Sprintf("match.kinds.%d", i), "kind %q matches no action kind (%s)", k, kindList())
		}
	}
	return nil
}
