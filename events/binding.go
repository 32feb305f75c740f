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

// The general codec, on sdk-go's binding. Encode and Decode (codec.go) read
// and write the canonical binary-mode headers directly and use this for
// what they are not sure of.

var ceSpecs = spec.WithPrefix(HeaderPrefix)

// encodeBinding is Encode through sdk-go's binding, for a valid event: the
// reference the direct encoder is held to (byte-identical headers), and the
// encoder of an event whose source a URI round trip would change.
func encodeBinding(e *Event) (Header, []byte, error) {
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

// decodeBinding is Decode through sdk-go's binding: the reference the direct
// decoder is held to (FuzzDecodeAgreesWithBinding), the reader of
// structured mode, and the decoder of whatever the direct one is not sure
// of, which gives the authoritative result and error.
func decodeBinding(h Header, body []byte) (*Event, error) {
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
