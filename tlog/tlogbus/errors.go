package tlogbus

import "errors"

var (
	// ErrNoCheckpoints: the checkpoints stream does not exist (Checkpointer.Run,
	// ReadRecords, LoadLog, VerifyStream, Prove), or holds no checkpoint
	// to prove against (VerifyStream, Prove).
	ErrNoCheckpoints = errors.New("tlogbus: no checkpoints")
	// ErrDiverged: the events stream no longer holds what the last
	// checkpoint covers (Checkpointer.Run refuses to go on), or a run's
	// event is not the one checkpointed (Prove).
	ErrDiverged = errors.New("tlogbus: the stream is not the one checkpointed")
	// ErrNewLog: the checkpoints stream does not hold the log whose last
	// checkpoint the checkpointer saved (its checkpoints are gone, or its
	// latest does not extend the saved one): the checkpointer refuses to
	// start a new log over it without an operator's decision
	// (CheckpointerConfig.NewLog) (Checkpointer.Run).
	ErrNewLog = errors.New("tlogbus: a new log over the one this checkpointer signed")
	// ErrFenced: another checkpointer stored a checkpoint of the log
	// (Checkpointer.Run).
	ErrFenced = errors.New("tlogbus: another checkpointer writes the log")
	// ErrWitness: a witness refused a checkpoint or did not answer
	// (AskWitness; the checkpointer logs it and goes on).
	ErrWitness = errors.New("tlogbus: witness")
)
