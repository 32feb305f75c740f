package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ms formats a latency in milliseconds.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// pct formats a share of one core (or of the machine) as a percentage.
func pct(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }

// perK is CPU seconds per 1,000 events.
func perK(d time.Duration, events int) string {
	if events == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", d.Seconds()*1000/float64(events))
}

func perSec(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func report(w io.Writer, res *results) error {
	cfg := res.cfg
	fmt.Fprintf(w, "\n## (a) Latency below saturation\n\n")
	fmt.Fprintf(w, "One `loop serve` worker, one remote interceptor (remote.Serve, allow) on tool.before in its own process, nats-server (`loop server`) in its own; each run: model (%s), calculator call (intercepted), model (%s), answer. Runs kept in flight by a closed loop, measured over %s after a warm-up. CPU is a share of one core; machine is the busy share of all cores, every process included; run-queue wait is how long the process' threads were runnable but waiting for a core, per second (/proc/<pid>/task/*/schedstat): above a few percent, latency is CPU contention, not hookbus.\n\n", cfg.modelDelay, cfg.modelDelay, cfg.window)
	fmt.Fprintln(w, "| in flight | runs/s | events/s | hook RTT p50 | hook RTT p99 | created→stored p50 | created→stored p99 | CPU worker | CPU interceptor | CPU nats-server | CPU driver | machine busy | run-queue wait worker / nats-server | hook.failed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range res.levels {
		r50, r99 := percentiles(l.ph.rtt)
		s50, s99 := percentiles(l.ph.stored)
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %d |\n",
			l.inFlight, perSec(l.runs, l.use.wall), perSec(l.ph.events, l.use.wall), ms(r50), ms(r99), ms(s50), ms(s99),
			pct(l.use.share("worker")), pct(l.use.share("interceptor")), pct(l.use.share("nats-server")), pct(l.use.share("driver")),
			pct(l.use.machine), pct(l.use.waitShare("worker")), pct(l.use.waitShare("nats-server")), l.ph.hookFailed)
	}
	if n := len(res.levels); n >= 2 {
		lo, hi := res.levels[0], res.levels[n-1]
		_, rlo := percentiles(lo.ph.rtt)
		_, rhi := percentiles(hi.ph.rtt)
		_, slo := percentiles(lo.ph.stored)
		_, shi := percentiles(hi.ph.stored)
		fmt.Fprintf(w, "\np99 at %d in flight / p99 at %d (goal ≤ 3 while the CPU is not saturated): hook RTT %s, created→stored %s; machine busy at %d: %s.\n",
			hi.inFlight, lo.inFlight, ratio(rhi, rlo), ratio(shi, slo), hi.inFlight, pct(hi.use.machine))
	}

	fmt.Fprintf(w, "\n## (b) Cost per event at saturation, against raw JetStream async publish\n\n")
	fmt.Fprintf(w, "%d runs submitted at once, no model delay, one worker (`--concurrency %d`), the same interceptor. Raw: the same stored messages (subject under %q, headers and body; new ids; the fence headers renamed so the server does not check them) published again with nats.go jetstream PublishMsgAsync into a stream of the same configuration, in the same run. CPU in seconds per 1,000 events.\n\n", cfg.satRuns, cfg.satConc, rawPrefix)
	fmt.Fprintln(w, "| path | events | wall | events/s | CPU worker(s) or publisher | CPU interceptor | CPU nats-server | CPU driver | CPU total | machine busy |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	var one *satResult
	for i := range res.sat {
		if res.sat[i].workers == 1 {
			one = &res.sat[i]
		}
	}
	if one != nil {
		ev := one.ph.events
		fmt.Fprintf(w, "| hookbus, 1 worker | %d | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", ev, one.use.wall.Round(time.Millisecond), perSec(ev, one.use.wall),
			perK(one.use.of("worker1"), ev), perK(one.use.of("interceptor"), ev), perK(one.use.of("nats-server"), ev), perK(one.use.of("driver"), ev), perK(one.use.total(), ev), pct(one.use.machine))
		r := res.raw
		fmt.Fprintf(w, "| raw PublishMsgAsync | %d | %s | %.0f | %s | – | %s | – | %s | %s |\n", r.events, r.use.wall.Round(time.Millisecond), perSec(r.events, r.use.wall),
			perK(r.use.of("publisher"), r.events), perK(r.use.of("nats-server"), r.events), perK(r.use.total(), r.events), pct(r.use.machine))
		hps, rps := perSec(ev, one.use.wall), perSec(r.events, r.use.wall)
		hk, rk := perEvent(one.use.total(), ev), perEvent(r.use.total(), r.events)
		fmt.Fprintf(w, "\nhookbus / raw: events/s %.2f; CPU per event (all processes) %.1fx; worker CPU per event / raw publisher CPU per event %.1fx; nats-server CPU per event %.1fx. Raw publishes failed: %d; runs failed: %d; hook.failed: %d.\n",
			hps/max(rps, 1e-9), hk/max(rk, 1e-18), perEvent(one.use.of("worker1"), ev)/max(perEvent(r.use.of("publisher"), r.events), 1e-18),
			perEvent(one.use.of("nats-server"), ev)/max(perEvent(r.use.of("nats-server"), r.events), 1e-18), r.failed, one.failed, one.ph.hookFailed)
		if len(one.api) > 0 {
			var parts []string
			for _, op := range sortedOps(one.api) {
				parts = append(parts, fmt.Sprintf("%s %.2f", op, float64(one.api[op])/float64(one.runs)))
			}
			fmt.Fprintf(w, "\nJetStream API requests per run (every client, $JS.API.>; the raw path makes none): %s.\n", strings.Join(parts, ", "))
			parts = parts[:0]
			for _, op := range sortedOps(one.reads) {
				parts = append(parts, fmt.Sprintf("%s %.2f", op, float64(one.reads[op])/float64(one.runs)))
			}
			if len(parts) > 0 {
				fmt.Fprintf(w, "Reads per run by stream, pulls by consumer: %s.\n", strings.Join(parts, ", "))
			}
		}
	}

	fmt.Fprintf(w, "\n## (c) 1 vs 2 workers on the same queue, at saturation\n\n")
	fmt.Fprintf(w, "%d runs submitted at once; each worker `--concurrency %d`; same interceptor and server.\n\n", cfg.satRuns, cfg.satConc)
	fmt.Fprintln(w, "| workers | runs/s | events/s | created→stored p50 | created→stored p99 | CPU workers | CPU interceptor | CPU nats-server | CPU s / 1,000 events (all) | machine busy | run-queue wait workers / nats-server | runs failed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range res.sat {
		var wcpu time.Duration
		var wwait float64
		for _, n := range s.use.roles {
			if strings.HasPrefix(n, "worker") {
				wcpu += s.use.of(n)
				wwait += s.use.waitShare(n)
			}
		}
		s50, s99 := percentiles(s.ph.stored)
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s / %s | %d |\n", s.workers, perSec(s.runs, s.use.wall), perSec(s.ph.events, s.use.wall), ms(s50), ms(s99),
			pct(wcpu.Seconds()/s.use.wall.Seconds()), pct(s.use.share("interceptor")), pct(s.use.share("nats-server")), perK(s.use.total(), s.ph.events), pct(s.use.machine),
			pct(wwait), pct(s.use.waitShare("nats-server")), s.failed)
	}

	if res.profile != "" {
		fmt.Fprintf(w, "\n## Where the worker's time goes (go tool pprof -top, the one-worker saturation phase)\n\n```\n%s```\n", res.profile)
	}
	return nil
}

func perEvent(d time.Duration, events int) float64 {
	if events == 0 {
		return 0
	}
	return d.Seconds() / float64(events)
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}
