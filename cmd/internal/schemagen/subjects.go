package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// A subject form is a subject with placeholders: "{prefix}.hook.tool.before.{plugin}".
type subjectForm struct {
	method  string       // the events.Subjects method that builds it
	stage   events.Stage // the stage it was built for, if the method takes one
	address string
}

// subjectForms returns the forms of every subject events.Subjects builds:
// each method that takes ids (and maybe a stage) and returns a subject and
// an error, called with placeholders named after its parameters (read from
// events/subject.go under root). Filters (…Filter…) and parsers (Parse…)
// are not subjects, nor is a result with a wildcard. A method taking a stage is called with every stage;
// Hook with every interceptable stage (nobody is asked on the others).
func subjectForms(root string) ([]subjectForm, error) {
	params, err := paramNames(filepath.Join(root, "events", "subject.go"), "Subjects")
	if err != nil {
		return nil, err
	}
	s := events.Subjects{Prefix: placeholder("prefix")}
	v := reflect.ValueOf(s)
	stageType := reflect.TypeFor[events.Stage]()
	errType := reflect.TypeFor[error]()
	var out []subjectForm
	for i := 0; i < v.NumMethod(); i++ {
		m := v.Type().Method(i)
		mt := m.Type // includes the receiver
		if strings.Contains(m.Name, "Filter") || strings.HasPrefix(m.Name, "Parse") ||
			mt.NumOut() != 2 || mt.Out(0).Kind() != reflect.String || mt.Out(1) != errType {
			continue
		}
		names, ok := params[m.Name]
		if !ok || len(names) != mt.NumIn()-1 {
			return nil, fmt.Errorf("events.Subjects.%s: parameter names not found in events/subject.go", m.Name)
		}
		stages := []events.Stage{""}
		for j := 1; j < mt.NumIn(); j++ {
			if mt.In(j) == stageType {
				stages = events.Stages()
				if m.Name == "Hook" {
					stages = events.InterceptableStages()
				}
			} else if mt.In(j).Kind() != reflect.String {
				return nil, fmt.Errorf("events.Subjects.%s: parameter %s is a %s", m.Name, names[j-1], mt.In(j))
			}
		}
		for _, st := range stages {
			args := []reflect.Value{v}
			for j := 1; j < mt.NumIn(); j++ {
				if mt.In(j) == stageType {
					args = append(args, reflect.ValueOf(st))
				} else {
					args = append(args, reflect.ValueOf(placeholder(names[j-1])).Convert(mt.In(j)))
				}
			}
			res := m.Func.Call(args)
			if err, _ := res[1].Interface().(error); err != nil {
				return nil, fmt.Errorf("events.Subjects.%s with placeholders %v: %v (teach cmd/internal/schemagen a placeholder it accepts)", m.Name, names, err)
			}
			addr := unplaceholder(res[0].String())
			if strings.ContainsAny(addr, "*>") {
				continue // a filter over subjects (RunsPinned), not a subject
			}
			out = append(out, subjectForm{method: m.Name, stage: st, address: addr})
		}
	}
	return out, nil
}

// placeholder is the stand-in of a parameter in a subject: a token that
// every id check and the writer token's encoding leave as it is. A
// definition digest must be 64 hex digits: its stand-in is digestPlaceholder.
func placeholder(name string) string {
	if name == "digest" {
		return digestPlaceholder
	}
	return "PARAM" + strings.ToUpper(name) + "PARAM"
}

// digestPlaceholder stands in for a definition digest (events.ValidateDigest).
var digestPlaceholder = strings.Repeat("d", 64)

// unplaceholder turns placeholders into AsyncAPI's {name}.
func unplaceholder(subject string) string {
	toks := strings.Split(subject, ".")
	for i, t := range toks {
		if t == digestPlaceholder {
			toks[i] = "{digest}"
			continue
		}
		if n, ok := strings.CutPrefix(t, "PARAM"); ok {
			if n, ok := strings.CutSuffix(n, "PARAM"); ok {
				toks[i] = "{" + strings.ToLower(n) + "}"
			}
		}
	}
	return strings.Join(toks, ".")
}

// paramNames reads the parameter names of typ's methods in a Go file.
func paramNames(file, typ string) (map[string][]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string)
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
			continue
		}
		if id, ok := fd.Recv.List[0].Type.(*ast.Ident); !ok || id.Name != typ {
			continue
		}
		var names []string
		for _, p := range fd.Type.Params.List {
			for _, n := range p.Names {
				names = append(names, n.Name)
			}
		}
		out[fd.Name.Name] = names
	}
	return out, nil
}

// docForms are the subject forms events.Subjects' doc comment lists
// ("<prefix>.hook.<stage>.<plugin>"), as AsyncAPI addresses; a form with
// <stage> stands for one address per stage.
func docForms(root string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "events", "subject.go"), nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE || gd.Doc == nil {
			continue
		}
		if ts := gd.Specs[0].(*ast.TypeSpec); ts.Name.Name != "Subjects" {
			continue
		}
		for _, line := range strings.Split(gd.Doc.Text(), "\n") {
			form, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			if !strings.HasPrefix(form, "<prefix>.") {
				continue
			}
			form = strings.NewReplacer("<", "{", ">", "}").Replace(form)
			if !strings.Contains(form, "{stage}") {
				out = append(out, form)
				continue
			}
			stages := events.Stages()
			if strings.Contains(form, ".hook.") {
				stages = events.InterceptableStages()
			}
			for _, st := range stages {
				out = append(out, strings.Replace(form, "{stage}", string(st), 1))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
