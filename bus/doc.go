// Package bus is hookbus' transport over NATS JetStream: an embedded or
// external nats-server, provisioning of the streams and buckets, publishing
// events (asynchronous, write-ahead, and a per-run flush barrier), durable
// observers with back-off and dead letters, replay and tail over ordered
// consumers, and the run-request work queue.
package bus
