package events_test

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
)

func Example() {
	e, err := events.New(events.StageToolBefore, events.Meta{
		Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "r1", Step: 1, Seq: 3, Subject: "clock",
	}, events.ToolBefore{Call: events.ToolCall{ID: "call_1", Name: "clock"}})
	if err != nil {
		panic(err)
	}
	hdr, body, err := events.Encode(e)
	if err != nil {
		panic(err)
	}
	fmt.Println(hdr["ce-type"][0], hdr["ce-seq"][0], string(body))

	back, err := events.Decode(hdr, body)
	if err != nil {
		panic(err)
	}
	p, _ := events.Data[events.ToolBefore](back)
	fmt.Println(back.Stage, back.AgentID, p.Call.Name)

	var subjects events.Subjects
	subj, _ := subjects.Event(e.AgentID, e.SessionID, e.Stage)
	fmt.Println(subj)
	// Output:
	// hookbus.tool.before 000000000003 {"call":{"id":"call_1","name":"clock"}}
	// tool.before support clock
	// hookbus.evt.support.s1.tool.before
}
