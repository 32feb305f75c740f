// Command loop runs hookbus agent loops: one run in the foreground (loop
// run), a worker over the run queue (loop serve), or a submission to that
// queue (loop submit). See "loop --help".
package main
