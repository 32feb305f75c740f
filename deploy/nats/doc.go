// Package natsconf holds no code: it is the home of the tests that prove the
// nats-server configurations in deploy/nats do what their comments say,
// against real nats-server instances (the server package, in-process, on
// loopback), never a mock.
//
// The files it checks:
//
//	single.conf       one JetStream server (R1), sync_interval 2m, stated
//	cluster.conf      what the three nodes share: routes, sync_interval always
//	cluster-n1.conf   server_name n1 + include cluster.conf (n2, n3 alike)
//	accounts.conf     the HOOKBUS and SYS accounts, users and permissions
//	docker-compose.yml the 3-node cluster, two loop workers, the page, an
//	                   example interceptor, the OpenTelemetry exporter, an observer
//
// What the tests prove:
//
//   - Every .conf file passes the check `nats-server -t -c FILE` makes: the
//     tests call server.ConfigureOptions with those very arguments, so a
//     warning fails as it fails the command. The settings the README
//     promises (max_payload, sync_interval, server names, routes, JetStream
//     limits) are what the server parsed.
//   - The cluster files form a cluster: the three nodes, loaded with
//     server.ProcessConfigFile and started in-process with their ports and
//     store directories rewritten (loopback, free ports, t.TempDir()), elect
//     a JetStream meta leader with all three peers, and hold an R3
//     HOOKBUS_EVENTS stream that acknowledges a publish.
//   - The trust tiers hold on the wire (single.conf loaded the same way): a
//     plugin answers on its own interception subjects in its own queue group
//     and nowhere else; an unprivileged plugin cannot subscribe to a
//     privileged stage (the server refuses with a permissions violation, and
//     drops those subjects from a wildcard subscription); a privileged
//     plugin can; plugins publish only replies; the auditor reads
//     HOOKBUS_EVENTS and publishes nothing under hookbus.>; the loop user can
//     do what a worker does with nats.go (events, KV registry, run queue,
//     object store, session replay) without one permission error, and cannot
//     write trust grants or reconfigure the audit stream; the admin
//     provisions the real assets with bus.Provision. hookbus' own transport
//     runs under these users too: remote.Serve as a plugin, bus.Publish,
//     SessionEvents as the loop, bus.Replay as the auditor.
//   - docker-compose.yml mounts the files that exist, runs nodes named as
//     the routes name them on go.mod's nats-server release, and connects
//     with users and passwords accounts.conf defines, each service as the
//     user its role needs; the example interceptor answers the subjects
//     and queue its user may and its registration names; the exporter
//     sends to Jaeger by the OTEL_* variables; the image holds every
//     binary compose runs.
//
// BenchmarkSyncInterval measures what sync_interval always costs on the
// disk under TMPDIR. README.md has the permission table and the known gaps.
package natsconf
