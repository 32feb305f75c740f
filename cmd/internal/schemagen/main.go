package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	root := flag.String("root", ".", "the repository's root: the schemas go to <root>/docs/schema")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

// write generates the schemas and replaces docs/schema's generated files
// with them (files no longer generated are removed).
func write(root string) error {
	files, err := Generate(root)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, OutDir)
	old, err := existing(dir)
	if err != nil {
		return err
	}
	for _, name := range old {
		if _, ok := files[name]; !ok {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	api, err := GenerateAsyncAPI(root)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, AsyncAPIFile), api, 0o644)
}

// existing lists the generated files under dir (every *.schema.json), as
// slash-separated paths relative to dir.
func existing(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if !d.IsDir() && isGenerated(d.Name()) {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}
