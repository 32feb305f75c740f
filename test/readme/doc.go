// Package readme holds the test that builds every Go snippet of the
// repository's README.md as a reader would: in a module of their own
// outside the tree, made by the README's own commands (a replace directive
// to their clone), so that neither the snippets nor the way the README says
// to depend on hookbus can drift. A whole program is built as it is; a
// fragment is built as the body of a function whose parameters declare the
// variables it uses (its wrapper in readme_test.go). A new fragment needs a
// wrapper: the test says so.
package readme
