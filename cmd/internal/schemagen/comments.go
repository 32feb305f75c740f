package main

import (
	"cmp"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// comments holds the doc comments of Go types and their fields, by
// "<import path>.<Type>" and "<import path>.<Type>.<Field>": the
// descriptions of the schemas.
type comments map[string]string

// readComments reads the doc comments of the packages in dirs (relative to
// root, which is the module modulePath), test files left out. A type's
// description is the first sentence of its comment; a field's is all of it.
func readComments(root, modulePath string, dirs ...string) (comments, error) {
	out := make(comments)
	for _, dir := range dirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			return nil, err
		}
		fset := token.NewFileSet()
		var pkg doc.Package // for Synopsis
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, name), nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			prefix := modulePath + "/" + filepath.ToSlash(dir) + "."
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					if !ts.Name.IsExported() {
						continue
					}
					text := ts.Doc.Text()
					if text == "" && len(gd.Specs) == 1 {
						text = gd.Doc.Text()
					}
					if text != "" {
						out[prefix+ts.Name.Name] = oneParagraph(pkg.Synopsis(text))
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						text := cmp.Or(field.Doc.Text(), field.Comment.Text())
						for _, n := range field.Names {
							if text != "" && n.IsExported() {
								out[prefix+ts.Name.Name+"."+n.Name] = oneParagraph(text)
							}
						}
					}
				}
			}
		}
	}
	return out, nil
}

// oneParagraph joins a comment's lines: line breaks within a paragraph
// become spaces, paragraphs stay apart.
func oneParagraph(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

// typeDoc is the description of type t.
func (c comments) typeDoc(t reflect.Type) string {
	return c[t.PkgPath()+"."+t.Name()]
}

// fieldDoc is the description of t's field: its comment, which starts
// with the Go name of the field ("HistoryMessages is how many..."), told
// with its JSON name ("history_messages is how many...").
func (c comments) fieldDoc(t reflect.Type, field string) string {
	text := c[t.PkgPath()+"."+t.Name()+"."+field]
	f, ok := t.FieldByName(field)
	if !ok || text == "" {
		return text
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if rest, ok := strings.CutPrefix(text, field+" "); ok && name != "" && name != "-" {
		return name + " " + rest
	}
	return text
}
