package events

import (
	"strconv"
	"strings"
	"time"
)

// The direct decoder of Decode.

// slotOf returns the slot of a lower-case header name, or -1.
func slotOf(key string) int {
	switch key {
	case "ce-specversion":
		return hSpec
	case "ce-id":
		return hID
	case "ce-type":
		return hType
	case "ce-source":
		return hSource
	case "ce-time":
		return hTime
	case "ce-subject":
		return hSubject
	case "content-type":
		return hContentType
	case "ce-agentid":
		return hAgent
	case "ce-sessionid":
		return hSession
	case "ce-runid":
		return hRun
	case "ce-step":
		return hStep
	case "ce-seq":
		return hSeq
	case "ce-traceparent":
		return hTrace
	case "ce-dataref":
		return hDataRef
	case "ce-parentagentid":
		return hParentAgent
	case "ce-parentsessionid":
		return hParentSession
	case "ce-parentrunid":
		return hParentRun
	case "ce-prevhash":
		return hPrevHash
	case "ce-signer":
		return hSigner
	case "ce-signature":
		return hSignature
	}
	return -1
}

// fastDecode reads a canonical binary-mode message into a valid event, or
// returns nil: then decodeBinding decides.
func fastDecode(h Header, body []byte) *Event {
	var v [nSlots]string
	var seen [nSlots]bool
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		slot := slotOf(k)
		if slot < 0 {
			ce := len(k) >= 3 && k[0]|0x20 == 'c' && k[1]|0x20 == 'e' && k[2] == '-'
			if !ce && !strings.EqualFold(k, HeaderContentType) {
				continue // Nats-Msg-Id and other non-CloudEvents headers
			}
			if slot = slotOf(strings.ToLower(k)); slot < 0 {
				return nil // an attribute or extension this path does not know
			}
		}
		if seen[slot] {
			return nil // the same header in two cases
		}
		seen[slot] = true
		s, err := PercentDecode(vs[0])
		if err != nil {
			return nil
		}
		v[slot] = s
	}
	if v[hSpec] != "1.0" || !seen[hID] || !seen[hSource] || !seen[hTime] || !seen[hAgent] ||
		!seen[hSession] || !seen[hRun] || !seen[hStep] || !seen[hSeq] ||
		(seen[hContentType] && v[hContentType] != ContentTypeJSON) ||
		(seen[hSubject] && (v[hSubject] == "" || strings.TrimSpace(v[hSubject]) != v[hSubject])) ||
		(seen[hTrace] && v[hTrace] == "") || (seen[hDataRef] && v[hDataRef] == "") ||
		(seen[hParentAgent] && v[hParentAgent] == "") || (seen[hParentSession] && v[hParentSession] == "") || (seen[hParentRun] && v[hParentRun] == "") ||
		(seen[hPrevHash] && v[hPrevHash] == "") || (seen[hSigner] && v[hSigner] == "") || (seen[hSignature] && v[hSignature] == "") ||
		!plainSource(v[hSource]) {
		return nil
	}
	stage, err := StageFromType(v[hType])
	if err != nil {
		return nil
	}
	t, err := ParseTime(v[hTime])
	if err != nil {
		return nil
	}
	step, err := strconv.Atoi(v[hStep])
	if err != nil {
		return nil
	}
	seq, err := strconv.ParseUint(v[hSeq], 10, 64)
	if err != nil {
		return nil
	}
	e := &Event{
		ID: v[hID], Stage: stage, Source: v[hSource], Time: t, Subject: v[hSubject],
		AgentID: v[hAgent], SessionID: v[hSession], RunID: v[hRun], Step: step, Seq: seq,
		Traceparent: v[hTrace], DataRef: v[hDataRef],
		ParentAgentID: v[hParentAgent], ParentSessionID: v[hParentSession], ParentRunID: v[hParentRun],
		PrevHash: v[hPrevHash], Signer: v[hSigner], Signature: v[hSignature],
	}
	if len(body) > 0 {
		e.Data = body // a received message's own buffer: not shared
	}
	if !validParsed(e) {
		return nil
	}
	return e
}

// validParsed reports whether Validate would accept e, an event fastDecode
// has just read: its stage came from StageFromType and its source passed
// plainSource (not empty), so only the rest is checked here.
func validParsed(e *Event) bool {
	return ValidateULID("event", e.ID) == nil && !e.Time.IsZero() && e.validateRest() == nil &&
		(e.DataRef != "" || ValidJSON(e.Data))
}

// ParseTime parses an RFC 3339 time as time.Parse(time.RFC3339Nano, s)
// does, several times faster for the form Encode writes (UTC,
// "2006-01-02T15:04:05.999999999Z"); the error is time.Parse's.
func ParseTime(s string) (time.Time, error) {
	if t, ok := parseTimeUTC(s); ok {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// parseTimeUTC parses the canonical form Encode writes,
// "2006-01-02T15:04:05[.fraction]Z", as time.Parse(time.RFC3339Nano) does,
// several times faster; false means "ask time.Parse".
func parseTimeUTC(s string) (time.Time, bool) {
	if len(s) < 20 || len(s) > 30 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	h, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	ns := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		f, ok := num(20, len(s)-1)
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			f *= 10
		}
		ns = f
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC), true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
