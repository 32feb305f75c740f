// Package tlogbus runs the transparency log of package tlog over a bus:
//
//   - Checkpointer reads every message of the events stream, in order,
//     through a durable consumer, and stores a signed checkpoint (a
//     tlog.Record) in the checkpoints stream every N messages or T seconds,
//     cosigned by the witnesses it asks. Its state is the last checkpoint
//     stored, so a restart loses nothing (observer checkpointer).
//   - ServeWitness serves a tlog.Witness as C2SP tlog-witness over NATS;
//     AskWitness and WitnessCheckpoint call one (observer witness).
//   - VerifyStream proves the stream as read against a checkpoint and every
//     stored one, naming what differs (observer verify --checkpoint).
//   - Prove writes the inclusion proof of a run's events (observer prove).
//   - ReadRecords, LastRecord, LoadLog read the stored checkpoints
//     (observer checkpoint).
//
// A checkpointer following a bus, then a verification:
//
//	signer, verifier, _ := tlog.ReadSigner("log.key")
//	cp, _ := tlogbus.NewCheckpointer(b, tlogbus.CheckpointerConfig{Signer: signer, Verifier: verifier})
//	go cp.Run(ctx)
//	...
//	verdict, err := tlogbus.VerifyStream(ctx, b, tlogbus.VerifyConfig{LogKey: verifier})
//
// docs/PROTOCOL.md ("Checkpoints") has the formats, docs/SECURITY.md what
// each layer detects.
package tlogbus
