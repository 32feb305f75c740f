package events

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
)

// Header names of the CloudEvents NATS binding (binary content mode) that
// hookbus writes. Reads ignore case.
const (
	HeaderPrefix      = "ce-"
	HeaderContentType = "content-type"
	// HeaderMsgID is JetStream's de-duplication header; Encode sets it to
	// the event id so a retried publish is stored once.
	HeaderMsgID = "Nats-Msg-Id"
)

// Header is a NATS message header. It has nats.Header's underlying type, so
// the two convert to each other without copying.
type Header = map[string][]string

var ceSpecs = spec.WithPrefix(HeaderPrefix)

// Encode writes e in CloudEvents binary content mode: attributes and
// extensions as percent-encoded ce-* headers, content-type, Nats-Msg-Id = id,
// and the JSON data as the body. It validates e first.
func Encode(e *Event) (Header, []byte, error) {
	if err := e.Validate(); err != nil {
		return nil, nil, err
	}
	ce := e.CloudEvent()
	w := &headerWriter{h: make(Header, 16)}
	if err := binding.ToMessage(&ce).ReadBinary(context.Background(), w); err != nil {
		return nil, nil, fmt.Errorf("%w: encode %s: %v", ErrMalformedEvent, e.ID, err)
	}
	w.h[HeaderMsgID] = []string{e.ID}
	return w.h, w.body, nil
}

// headerWriter is a binding.BinaryWriter into NATS headers.
type headerWriter struct {
	h    Header
	body []byte
}

func (w *headerWriter) Start(context.Context) error { return nil }
func (w *headerWriter) End(context.Context) error   { return nil }

func (w *headerWriter) SetData(r io.Reader) error {
	if br, ok := r.(*bytes.Reader); ok {
		w.body = make([]byte, br.Len())
		_, err := br.Read(w.body)
		return err
	}
	b, err := io.ReadAll(r)
	w.body = b
	return err
}

func (w *headerWriter) SetAttribute(a spec.Attribute, v any) error {
	if a.Kind() == spec.DataContentType {
		return w.set(HeaderContentType, v)
	}
	return w.set(HeaderPrefix+a.Name(), v)
}

func (w *headerWriter) SetExtension(name string, v any) error {
	return w.set(HeaderPrefix+name, v)
}

func (w *headerWriter) set(key string, v any) error {
	if v == nil {
		delete(w.h, key)
		return nil
	}
	s, err := types.Format(v)
	if err != nil {
		return err
	}
	w.h[key] = []string{PercentEncode(s)}
	return nil
}

// Decode reads a hookbus event from a NATS message's header and body. Binary
// content mode is expected (ce-* headers, read without regard to case);
// structured mode (content-type application/cloudevents+json) is accepted
// too. A message that is not a valid hookbus event gives an error wrapping
// ErrMalformedEvent that says what is wrong.
func Decode(h Header, body []byte) (*Event, error) {
	m := &headerMessage{h: make(map[string]string, len(h)), body: body}
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, HeaderPrefix) && lk != HeaderContentType {
			continue
		}
		v, err := PercentDecode(vs[0])
		if err != nil {
			return nil, fmt.Errorf("%w: header %s: %v", ErrMalformedEvent, k, err)
		}
		if prev, ok := m.h[lk]; ok && prev != v {
			// ce-id and CE-ID with two values: which one is meant is
			// anybody's guess (it would be map order's).
			return nil, fmt.Errorf("%w: header %s is given twice, in different cases, with different values", ErrMalformedEvent, lk)
		}
		m.h[lk] = v
	}
	if sv, ok := m.h[HeaderPrefix+"specversion"]; ok {
		m.version = ceSpecs.Version(sv)
		if m.version == nil {
			return nil, fmt.Errorf("%w: unsupported ce-specversion %q", ErrMalformedEvent, sv)
		}
	} else if m.format = format.Lookup(m.h[HeaderContentType]); m.format == nil {
		return nil, fmt.Errorf("%w: no ce-specversion header and content-type %q is not a CloudEvents format", ErrMalformedEvent, m.h[HeaderContentType])
	}
	ce, err := binding.ToEvent(context.Background(), m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEvent, err)
	}
	return FromCloudEvent(*ce)
}

// headerMessage is a binding.MessageReader over lower-cased, decoded headers.
type headerMessage struct {
	h       map[string]string
	body    []byte
	version spec.Version
	format  format.Format
}

func (m *headerMessage) ReadEncoding() binding.Encoding {
	if m.version != nil {
		return binding.EncodingBinary
	}
	return binding.EncodingStructured
}

func (m *headerMessage) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.format == nil {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, m.format, bytes.NewReader(m.body))
}

func (m *headerMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	if m.version == nil {
		return binding.ErrNotBinary
	}
	for k, v := range m.h {
		if k == HeaderContentType {
			if err := w.SetAttribute(m.version.AttributeFromKind(spec.DataContentType), v); err != nil {
				return err
			}
			continue
		}
		if attr := m.version.Attribute(k); attr != nil {
			if err := w.SetAttribute(attr, v); err != nil {
				return err
			}
			continue
		}
		name := strings.TrimPrefix(k, HeaderPrefix)
		if !cloudevents.IsExtensionNameValid(name) {
			return fmt.Errorf("header %s: %q is not a valid CloudEvents extension name", k, name)
		}
		if err := w.SetExtension(name, v); err != nil {
			return err
		}
	}
	if len(m.body) > 0 {
		return w.SetData(bytes.NewReader(m.body))
	}
	return nil
}

func (m *headerMessage) Finish(error) error { return nil }

// GetAttribute implements binding.MessageMetadataReader.
func (m *headerMessage) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	if m.version == nil {
		return nil, nil
	}
	attr := m.version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	key := HeaderPrefix + attr.Name()
	if k == spec.DataContentType {
		key = HeaderContentType
	}
	if v, ok := m.h[key]; ok {
		return attr, v
	}
	return attr, nil
}

// GetExtension implements binding.MessageMetadataReader.
func (m *headerMessage) GetExtension(name string) any {
	if v, ok := m.h[HeaderPrefix+strings.ToLower(name)]; ok {
		return v
	}
	return nil
}

// PercentEncode escapes a header value as the CloudEvents bindings require:
// bytes outside printable ASCII, space, '"' and '%' become %XX. A value with
// none of them is returned as is, without allocating.
func PercentEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

func needsEscape(c byte) bool { return c <= 0x20 || c >= 0x7F || c == '"' || c == '%' }

// PercentDecode undoes PercentEncode; a truncated or non-hex escape is an
// error. A value without '%' is returned as is, without allocating.
func PercentDecode(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated percent escape in %q", s)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("bad percent escape %q", s[i:i+3])
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
