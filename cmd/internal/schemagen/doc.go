// Command schemagen writes the JSON Schemas (draft 2020-12) of hookbus' wire
// protocol into docs/schema, from the Go types that write and read it: the
// payload of every stage (events), the CloudEvents envelope and its
// binary-mode headers, the interception request's headers and the decision
// reply (interceptors), run requests, wake-ups and registry entries; and
// docs/asyncapi.yaml, the AsyncAPI 3.0 document of every subject (its
// addresses built by events.Subjects), with those schemas as payloads.
//
//	go generate ./cmd/internal/schemagen   # or: go run ./cmd/internal/schemagen -root .
//
// Descriptions are the Go doc comments of the types and fields; enums
// (stages, decisions, reasons, failure kinds) come from the tables and
// constants of events and interceptors, so a new stage or decision changes
// the schemas on the next run. TestSchemasInSync and TestAsyncAPIInSync
// regenerate them and fail when the files differ, saying how to
// regenerate; TestAsyncAPIHasEverySubject fails when events.Subjects builds
// a subject the document lacks. docs/schema/README.md lists the files.
package main

//go:generate go run . -root ../../..
