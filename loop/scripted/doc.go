// Package scripted is a deterministic loop.Model for demos and tests: it
// replies from a Script, reply i on step i+1 of every run, so a run needs no
// language model, no key and no network.
//
//	model := scripted.New(scripted.Demo()) // asks the clock and the calculator, then answers
//	s, err := scripted.Load("script.json")  // or a script of your own
//
// The script format is documented on Script.
package scripted
