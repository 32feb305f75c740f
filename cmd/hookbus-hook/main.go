// The runtime starts no goroutine to follow the CPU limit: the hook runs
// one goroutine for a few milliseconds, and GOMAXPROCS changes nothing it
// does.

//go:debug updatemaxprocs=0

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Exit statuses: the agents' own meanings of a command hook's.
const (
	exitOK      = 0
	exitProceed = 1 // a non-blocking error: shown, the event proceeds
	exitBlock   = 2 // a blocking error: the call or prompt is refused, stderr the reason
)

// maxInput bounds the hook input read from stdin (a tool's output may be
// large; the gateway's --max-body is 8 MiB by default).
const maxInput = 64 << 20

// errUsage is a command line or setting that cannot be meant.
var errUsage = errors.New("usage")

// config is what the command line and the environment say.
type config struct {
	url     *url.URL
	token   string
	policy  string
	timeout time.Duration
}

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// run is the command: parse, post, print; its exit status.
func run(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "hookbus-hook: %v\n", err)
		return exitBlock
	}
	in, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	if err == nil && len(in) > maxInput {
		err = fmt.Errorf("hook input over %d bytes", maxInput)
	}
	if err != nil {
		return c.outage(stderr, err)
	}
	body, err := c.post(in)
	if err != nil {
		return c.outage(stderr, err)
	}
	if len(body) > 0 {
		// One write: the agent reading the answer wakes once.
		_, _ = stdout.Write(append(body, '\n'))
	}
	return exitOK
}

// outage answers when the gateway could not: by policy.
func (c *config) outage(stderr io.Writer, err error) int {
	if c.policy == "fail" {
		fmt.Fprintf(stderr, "hookbus is unavailable and its policy is to fail closed: %v\n", err)
		return exitBlock
	}
	fmt.Fprintf(stderr, "hookbus-hook: %v; the event proceeds unchecked\n", err)
	return exitProceed
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("hookbus-hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	policy := fs.String("policy", "ignore", "when the gateway cannot answer: ignore (exit 1, the event proceeds) or fail (exit 2, the call or prompt is blocked)")
	tokenFile := fs.String("token-file", "", "a file holding the gateway's bearer token (default: $HOOKBUS_GATEWAY_TOKEN)")
	timeout := fs.Duration("timeout", 35*time.Second, "the longest wait for the gateway's answer: above the gateway's --timeout, under the agent's hook timeout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hookbus-hook [--policy ignore|fail] [--token-file FILE] [--timeout D] [URL]\n\nPosts the hook input on stdin to loop gateway's URL (default $HOOKBUS_GATEWAY_URL) and prints its answer.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	raw := getenv("HOOKBUS_GATEWAY_URL")
	switch fs.NArg() {
	case 0:
	case 1:
		raw = fs.Arg(0)
	default:
		return nil, fmt.Errorf("%w: one URL, not %q", errUsage, fs.Args())
	}
	if raw == "" {
		return nil, fmt.Errorf("%w: give the gateway's URL (http://HOST:PORT/ROUTE) or set $HOOKBUS_GATEWAY_URL", errUsage)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("%w: %q is not an http:// URL (hookbus-hook speaks plain HTTP, to a gateway on loopback or a trusted network; over https use loop agent-hook)", errUsage, raw)
	}
	if *policy != "ignore" && *policy != "fail" {
		return nil, fmt.Errorf("%w: --policy %q: give ignore or fail", errUsage, *policy)
	}
	if *timeout <= 0 {
		return nil, fmt.Errorf("%w: --timeout %s: give a positive duration", errUsage, *timeout)
	}
	c := &config{url: u, policy: *policy, timeout: *timeout, token: getenv("HOOKBUS_GATEWAY_TOKEN")}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return nil, fmt.Errorf("%w: --token-file: %v", errUsage, err)
		}
		c.token = strings.TrimSpace(string(b))
	}
	return c, nil
}

// post sends in to the gateway as one HTTP/1.0 request (the answer ends
// with the connection: no chunking to read) and returns the answer's body;
// an error for no answer or a status other than 200.
func (c *config) post(in []byte) ([]byte, error) {
	deadline := time.Now().Add(c.timeout)
	host := c.url.Host
	if c.url.Port() == "" {
		host = net.JoinHostPort(c.url.Hostname(), "80")
	}
	conn, err := dial(host, deadline)
	if err != nil {
		return nil, fmt.Errorf("the gateway at %s did not answer: %w", c.url.Redacted(), err)
	}
	defer conn.Close()
	var req bytes.Buffer
	req.Grow(256 + len(in))
	req.WriteString("POST " + c.url.RequestURI() + " HTTP/1.0\r\nHost: " + c.url.Host +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(in)) + "\r\n")
	if c.token != "" {
		req.WriteString("Authorization: Bearer " + c.token + "\r\n")
	}
	req.WriteString("\r\n")
	req.Write(in)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, fmt.Errorf("the gateway at %s did not take the hook input: %w", c.url.Redacted(), err)
	}
	resp, err := readAnswer(conn)
	if err != nil {
		return nil, fmt.Errorf("the gateway at %s did not answer in full: %w", c.url.Redacted(), err)
	}
	head, body, ok := bytes.Cut(resp, []byte("\r\n\r\n"))
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	f := strings.Fields(string(line))
	if !ok || len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return nil, fmt.Errorf("the gateway at %s answered no HTTP response (%.80q)", c.url.Redacted(), resp)
	}
	if f[1] != "200" {
		return nil, fmt.Errorf("the gateway at %s answered %s: %s", c.url.Redacted(), strings.Join(f[1:], " "), strings.TrimSpace(string(body)))
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
