package policy

import "errors"

var (
	// ErrInvalid is returned by Parse and Compile for a policy that cannot
	// be used: YAML that does not parse or has unknown keys, a bad name,
	// mode, action, rollout, stage or glob, or an expression that does not
	// type-check, refers to unknown fields, variables or functions, or
	// costs more than the limit. The message starts "file:line:column:"
	// where the file says it.
	ErrInvalid = errors.New("policy: invalid")
	// ErrNoHistory is returned by Compile (wrapped in ErrInvalid) for a
	// policy that reads the session's history or a counter when no
	// History was given (WithHistory).
	ErrNoHistory = errors.New("policy: history functions need WithHistory")
	// ErrCostLimit is returned by Compile (wrapped in ErrInvalid) for an
	// expression whose estimated cost exceeds the limit, and by Evaluate
	// (wrapped in ErrEvaluation) for an evaluation that exceeded it.
	ErrCostLimit = errors.New("policy: cost limit exceeded")
	// ErrEvaluation is returned by Evaluate when an expression failed at
	// run time (a missing key, a bad regular expression, the cost limit, a
	// history that did not answer). The policy's failurePolicy says what
	// the chain does with it.
	ErrEvaluation = errors.New("policy: evaluation failed")
	// ErrInvalidOption is returned by Compile for a bad Option.
	ErrInvalidOption = errors.New("policy: invalid option")
)
