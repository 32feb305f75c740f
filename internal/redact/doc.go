// Package redact keeps credentials out of what hookbus prints. URL hides the
// user info of NATS server URLs (nats://user:pass@host becomes
// nats://user:xxxxx@host, a token nats://tok@host becomes nats://xxxxx@host);
// Writer replaces known secrets (passwords, tokens) wherever they appear in
// a stream of messages and log lines. The commands route every error and
// log line through both:
//
//	stderr = redact.NewWriter(os.Stderr, redact.Secrets(args, os.Getenv)...)
//	return fmt.Errorf("connect %s: %w", redact.URL(url), err)
package redact
