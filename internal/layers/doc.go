// Package layers holds the test of hookbus' one rule of placement: every
// import runs one way, down the layers docs/ARCHITECTURE.md names in the
// first line of its package section. The table of layers is in
// layers_test.go; a package that imports one of a layer above its own, a
// package placed in no layer, or an ARCHITECTURE.md whose first line no
// longer says the table fails the test, naming the arrow.
package layers
