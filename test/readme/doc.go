// Package readme holds the test that builds every Go snippet of the
// repository's README.md, so that none can drift from the API: a whole
// program is built as it is; a fragment is built as the body of a function
// whose parameters declare the variables it uses (its wrapper in
// readme_test.go). A new fragment needs a wrapper: the test says so.
package readme
