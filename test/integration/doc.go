// Package integration holds hookbus' end-to-end tests: the real loop and
// observer binaries, built once per test run, against real nats-servers
// (embedded in-process, or the loop's own embedded server in another
// process). Nothing here mocks NATS.
package integration
