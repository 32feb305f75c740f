// Command loop runs hookbus agent loops: one run in the foreground (loop
// run), a worker over the run queue (loop serve), or a submission to that
// queue (loop submit); and it brings Claude Code onto the bus: loop
// claude-hook is a Claude Code command hook, loop gateway a server for its
// http hooks (package bridge). See "loop --help".
package main
