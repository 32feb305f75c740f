package natsconf_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkSyncInterval measures what `sync_interval: always` costs on the
// disk under TMPDIR: single.conf as written (fsync every 2 minutes) against
// the same with sync_interval always, publishing 1 KB events into an R1
// HOOKBUS_EVENTS one at a time (each waits for its ack, as a write-ahead
// tool.before does) and asynchronously (acks awaited in windows of 256, as
// bus.Publish does). Run it on the disk the server will use:
//
//	TMPDIR=/var/lib/nats go test -run '^$' -bench SyncInterval ./deploy/nats
func BenchmarkSyncInterval(b *testing.B) {
	for _, mode := range []struct {
		name   string
		always bool
	}{{"interval=2m", false}, {"always", true}} {
		for _, async := range []bool{false, true} {
			name := mode.name + "/sync-publish"
			if async {
				name = mode.name + "/async-publish"
			}
			b.Run(name, func(b *testing.B) {
				opts, err := server.ProcessConfigFile("single.conf")
				if err != nil {
					b.Fatal(err)
				}
				opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
				opts.HTTPHost, opts.HTTPPort = "", 0
				opts.StoreDir = b.TempDir()
				opts.NoLog, opts.NoSigs = true, true
				opts.SyncAlways = mode.always
				s, err := server.NewServer(opts)
				if err != nil {
					b.Fatal(err)
				}
				s.Start()
				defer func() { s.Shutdown(); s.WaitForShutdown() }()
				if !s.ReadyForConnections(wait) {
					b.Fatal("server not ready")
				}
				nc, _ := connect(b, s, opts, "loop")
				admin, _ := connect(b, s, opts, "admin")
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				ajs, err := jetstream.New(admin)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ajs.CreateStream(ctx, jetstream.StreamConfig{
					Name: "HOOKBUS_EVENTS", Subjects: []string{"hookbus.evt.>"}, Storage: jetstream.FileStorage,
				}); err != nil {
					b.Fatal(err)
				}
				js, err := jetstream.New(nc)
				if err != nil {
					b.Fatal(err)
				}
				body := make([]byte, 1024)
				b.SetBytes(int64(len(body)))
				b.ResetTimer()
				if !async {
					for range b.N {
						if _, err := js.Publish(ctx, "hookbus.evt.a.s.tool.before", body); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				var futures []jetstream.PubAckFuture
				wait := func() {
					for _, f := range futures {
						select {
						case <-f.Ok():
						case err := <-f.Err():
							b.Fatal(err)
						}
					}
					futures = futures[:0]
				}
				for range b.N {
					f, err := js.PublishAsync("hookbus.evt.a.s.tool.after", body)
					if err != nil {
						b.Fatal(err)
					}
					if futures = append(futures, f); len(futures) == 256 {
						wait()
					}
				}
				wait()
			})
		}
	}
}
