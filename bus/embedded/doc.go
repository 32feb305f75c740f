// Package embedded runs nats-server with JetStream inside the process: the
// server `loop` and `observer` start when no --nats is given, and the one
// bus/bustest starts for tests. It is its own package so that importing
// bus (a plugin that only calls remote.Serve) links no server code.
//
// # Start
//
// Start a server on a store directory, connect to it in-process (no TCP)
// and put a bus on the connection:
//
//	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: ".hookbus"})
//	defer srv.Shutdown()
//	nc, err := srv.Connect()   // in-process; srv.ClientURL() when Listen is set
//	b, err := bus.New(nc)
//	err = b.Provision(ctx)
//
// Config.Listen adds a TCP listener for other processes ("127.0.0.1:4222";
// port -1 picks a free one). A server holds an exclusive lock on its store
// (LockFileName) while it runs, so a second server on the same directory
// fails with ErrStoreLocked instead of corrupting it. OpenStore opens a
// stopped server's store without a listener, to read it offline.
package embedded
