// Package readme holds the tests of the repository's documentation:
// README.md and the Markdown files under docs/.
//
// TestReadmeGoSnippetsBuild builds every Go snippet of them as a reader
// would: in a module of their own outside the tree, made by the README's
// own commands (a replace directive to their clone), so that neither the
// snippets nor the way the README says to depend on hookbus can drift. A
// whole program is built as it is; declarations (types, interfaces) as a
// file of them; a fragment as the body of a function whose parameters
// declare the variables it uses (its wrapper in readme_test.go). A new
// fragment needs a wrapper: the test says so.
//
// TestLinks checks that every relative link of them names a file or
// directory that exists, and every #anchor a heading of its Markdown file,
// by GitHub's rules.
package readme
