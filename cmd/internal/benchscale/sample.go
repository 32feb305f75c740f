package main

import (
	"strconv"
	"time"
)

// role names a process of the benchmark in the tables.
type role struct {
	name string
	proc *proc // nil: this process (the driver, or the raw publisher)
}

// sample is the CPU time of every process at one moment.
type sample struct {
	at      time.Time
	cpu     []time.Duration // by role, in order
	wait    []time.Duration // run-queue wait, by role
	machine machineTicks
}

// usage is what was used between two samples.
type usage struct {
	wall    time.Duration
	roles   []string
	cpu     []time.Duration
	wait    []time.Duration // run-queue wait (runnable, not running)
	machine float64         // busy share of all cores, every process of the machine
}

func takeSample(roles []role) sample {
	s := sample{at: time.Now()}
	for _, r := range roles {
		var d time.Duration
		pid := "self"
		if r.proc == nil {
			d = selfCPU()
		} else {
			pid = strconv.Itoa(r.proc.cmd.Process.Pid)
			if c, err := r.proc.cpu(); err == nil {
				d = c
			}
		}
		w, _ := runQueueWait(pid)
		s.cpu = append(s.cpu, d)
		s.wait = append(s.wait, w)
	}
	s.machine, _ = readMachine()
	return s
}

func since(roles []role, a, b sample) usage {
	u := usage{wall: b.at.Sub(a.at), machine: busyShare(a.machine, b.machine)}
	for i, r := range roles {
		u.roles = append(u.roles, r.name)
		u.cpu = append(u.cpu, b.cpu[i]-a.cpu[i])
		u.wait = append(u.wait, b.wait[i]-a.wait[i])
	}
	return u
}

// of returns the CPU time of the named role (0 if absent).
func (u usage) of(name string) time.Duration {
	for i, n := range u.roles {
		if n == name {
			return u.cpu[i]
		}
	}
	return 0
}

// waitShare is the run-queue wait of the named role per second of wall
// time (1 = on average one thread waiting for a core all along).
func (u usage) waitShare(name string) float64 {
	for i, n := range u.roles {
		if n == name && u.wall > 0 {
			return u.wait[i].Seconds() / u.wall.Seconds()
		}
	}
	return 0
}

// share is the CPU time of the named role as a share of one core.
func (u usage) share(name string) float64 {
	if u.wall <= 0 {
		return 0
	}
	return u.of(name).Seconds() / u.wall.Seconds()
}

// total is the CPU time of every role together.
func (u usage) total() time.Duration {
	var t time.Duration
	for _, c := range u.cpu {
		t += c
	}
	return t
}
