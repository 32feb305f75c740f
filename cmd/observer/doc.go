// Command observer is hookbus' CLI for people: replay a session's timeline
// from the stream, tail live events, and manage the interceptor registry.
// See "observer --help".
package main
