package command

import "sync"

// capBuffer keeps the first max bytes written to it and counts the rest. It
// is safe for concurrent use.
type capBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - len(b.buf)
	if room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	if len(p) > room {
		b.dropped += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

// bytes returns what was kept and how many bytes were left out.
func (b *capBuffer) bytes() ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...), b.dropped
}
