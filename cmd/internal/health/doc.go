// Package health answers the probes of a long-running hookbus process:
// GET /healthz (alive: the process answers) and GET /readyz (ready: every
// check passes, and the process is not draining), as Kubernetes' liveness
// and readiness probes read them.
//
// A command adds its checks (connected to NATS, its stream reachable, its
// consumer bound) and serves Handler on its admin address beside
// /metrics; when it starts to drain it calls Drain, and /readyz answers
// 503 from then on, so that no new work is routed to it while what it
// holds finishes:
//
//	h := health.New()
//	h.Add("nats", func(ctx context.Context) error { ... })
//	mux.Handle("/", h.Handler())
//	<-ctx.Done()
//	h.Drain()
//
// Each answer lists the checks, one a line ("ok nats", "FAIL stream:
// ..."), as kube-apiserver's verbose /readyz does.
package health
