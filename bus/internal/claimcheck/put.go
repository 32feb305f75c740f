package claimcheck

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// chunkSize is the size of an object's chunks (nats.go's default).
const chunkSize = 128 * 1024

// putObject writes data as an object of bucket in the object store's
// layout (chunks on $O.<bucket>.C.<nuid>, then the object's description on
// $O.<bucket>.M.<name in base64url>), which nats.go's object store reads.
// Unlike the object store's own Put, it sends no roll-up header: the
// payloads bucket refuses roll-ups and purges (bus.Provision), so that no
// writer can erase what the events point to. An object is written once
// (PutData skips one that exists), so there is no older version to roll up.
func putObject(ctx context.Context, js jetstream.JetStream, bucket string, meta jetstream.ObjectMeta, data []byte) error {
	id := rand.Text()
	chunkSubj := "$O." + bucket + ".C." + id
	h := sha256.New()
	var acks []jetstream.PubAckFuture
	for off := 0; off < len(data); off += chunkSize {
		end := min(off+chunkSize, len(data))
		h.Write(data[off:end])
		f, err := js.PublishAsync(chunkSubj, data[off:end])
		if err != nil {
			return err
		}
		acks = append(acks, f)
	}
	for i, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("chunk %d: %w", i, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	chunks := len(acks)
	meta.Opts = &jetstream.ObjectMetaOptions{ChunkSize: chunkSize}
	info := jetstream.ObjectInfo{
		ObjectMeta: meta, Bucket: bucket, NUID: id,
		Size: uint64(len(data)), Chunks: uint32(chunks), Digest: jetstream.GetObjectDigestValue(h),
	}
	body, err := json.Marshal(info)
	if err != nil {
		return err
	}
	m := nats.NewMsg("$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(meta.Name)))
	m.Data = body
	if _, err := js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("the object's description: %w", err)
	}
	return nil
}

// getObject reads the object name of bucket from its stream: the first
// description stored under the name, not the last, so that a description
// published later (one that marks the object deleted, or points it at
// other chunks) changes nothing; then the first Chunks messages of its
// chunk subject, checked against its size and digest. An object marked
// deleted in its first description, or not there, is
// jetstream.ErrObjectNotFound; chunks that do not add up are
// jetstream.ErrDigestMismatch.
func getObject(ctx context.Context, st jetstream.Stream, bucket, name string) ([]byte, error) {
	metaSubj := "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	raw, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(metaSubj))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: %s", jetstream.ErrObjectNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(raw.Data, &info); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", jetstream.ErrBadObjectMeta, name, err)
	}
	if info.Deleted || info.NUID == "" {
		return nil, fmt.Errorf("%w: %s", jetstream.ErrObjectNotFound, name)
	}
	chunkSubj := "$O." + bucket + ".C." + info.NUID
	data := make([]byte, 0, min(info.Size, 1<<30))
	h := sha256.New()
	seq := uint64(1)
	for range info.Chunks {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(chunkSubj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, fmt.Errorf("%w: %s: chunks missing", jetstream.ErrDigestMismatch, name)
		}
		if err != nil {
			return nil, err
		}
		h.Write(m.Data)
		data = append(data, m.Data...)
		seq = m.Sequence + 1
	}
	if uint64(len(data)) != info.Size || jetstream.GetObjectDigestValue(h) != info.Digest {
		return nil, fmt.Errorf("%w: %s", jetstream.ErrDigestMismatch, name)
	}
	return data, nil
}
