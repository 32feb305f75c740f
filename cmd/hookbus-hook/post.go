package main

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// post sends in to the gateway as one HTTP/1.0 request (the answer ends
// with the connection: no chunking to read) and returns the answer's body;
// an error for no answer or a status other than 200.
func (c *config) post(in []byte) ([]byte, error) {
	deadline := time.Now().Add(c.timeout)
	at := "the gateway at " + c.url.redacted
	conn, err := dial(c.url.addr, deadline)
	if err != nil {
		return nil, &wrapped{msg: at + " did not answer: " + err.Error(), err: err}
	}
	defer conn.Close()
	var req bytes.Buffer
	req.Grow(256 + len(in))
	req.WriteString("POST " + c.url.uri + " HTTP/1.0\r\nHost: " + c.url.host +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(in)) + "\r\n")
	if c.token != "" {
		req.WriteString("Authorization: Bearer " + c.token + "\r\n")
	}
	req.WriteString("\r\n")
	req.Write(in)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, &wrapped{msg: at + " did not take the hook input: " + err.Error(), err: err}
	}
	resp, err := readAnswer(conn)
	if err != nil {
		return nil, &wrapped{msg: at + " did not answer in full: " + err.Error(), err: err}
	}
	head, body, ok := bytes.Cut(resp, []byte("\r\n\r\n"))
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	f := strings.Fields(string(line))
	if !ok || len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return nil, errors.New(at + " answered no HTTP response (" + strconv.Quote(string(resp[:min(len(resp), 80)])) + ")")
	}
	if f[1] != "200" {
		return nil, errors.New(at + " answered " + strings.Join(f[1:], " ") + ": " + strings.TrimSpace(string(body)))
	}
	return bytes.TrimSpace(body), nil
}

// readAnswer reads an HTTP response from r: to the end of its body when
// it has a Content-Length (the gateway's closing of the connection is not
// waited for), else to the end of the connection.
func readAnswer(r io.Reader) ([]byte, error) {
	buf := make([]byte, 0, 1024)
	want := -1 // the response's length, once its header is read
	for want < 0 || len(buf) < want {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if want < 0 {
			want = answerLength(buf)
		}
	}
	return buf[:want], nil
}

// answerLength is the length of the response that starts buf, header and
// body, when its header is all in buf and says its body's length; else -1.
func answerLength(buf []byte) int {
	head, _, ok := bytes.Cut(buf, []byte("\r\n\r\n"))
	if !ok {
		return -1
	}
	for _, line := range bytes.Split(head, []byte("\r\n"))[1:] {
		k, v, _ := bytes.Cut(line, []byte(":"))
		if !strings.EqualFold(string(bytes.TrimSpace(k)), "Content-Length") {
			continue
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
		if err != nil || n < 0 || n > maxInput {
			return -1
		}
		return len(head) + 4 + n
	}
	return -1
}
