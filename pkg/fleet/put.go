package fleet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errBodyThere is a body whose description the object store has already
// (stored, removed, or being put by another node): the store's own Put
// replaces it.
var errBodyThere = errors.New("the object store has a description of it already")

// errBodyChanged is a file whose bytes are not the sha256 its change names.
var errBodyChanged = errors.New("the file changed while it was published")

// putNew stores body, whose sha256 is hash, as a new object of the store,
// as the store's Put does, with less: Put reads the object's description
// first (a round trip more for every new body) and waits for its chunks
// through a subscription of its own. Here the chunks are published at
// once and their acknowledgements awaited together, then the description
// is written on the condition that the store has none (an expected last
// sequence of 0 on its subject), so that no chunks of an earlier put are
// left behind unnamed: errBodyThere says that the condition failed, and
// the store's Put must replace the description. A description is written
// only once its chunks are stored (a chunk's publish retried after it
// could not land otherwise). Chunks that no description names are purged.
func (s *Sync) putNew(ctx context.Context, hash string, body io.Reader, chunk uint32) (err error) {
	want, err := bodyDigest(hash)
	if err != nil {
		return err
	}
	id := rand.Text()
	chunks := "$O." + BodyStore + ".C." + id
	defer func() {
		if err != nil {
			s.bodyStream.Purge(context.WithoutCancel(ctx), jetstream.WithPurgeSubject(chunks))
		}
	}()
	info := &jetstream.ObjectInfo{Bucket: BodyStore, NUID: id,
		ObjectMeta: jetstream.ObjectMeta{Name: hash, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunk}}}
	if err := s.putChunks(ctx, chunks, body, info); err != nil {
		return err
	}
	if info.Digest != want {
		return errBodyChanged
	}
	m := nats.NewMsg("$O." + BodyStore + ".M." + base64.URLEncoding.EncodeToString([]byte(hash)))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	if m.Data, err = json.Marshal(info); err != nil {
		return err
	}
	_, err = s.node.js.PublishMsg(ctx, m)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return errBodyThere
	}
	return err
}

// putChunks publishes body in chunks of chunk bytes on subject, all at
// once, and waits until the store has every one; info gets their count,
// size and digest.
func (s *Sync) putChunks(ctx context.Context, subject string, body io.Reader, info *jetstream.ObjectInfo) error {
	h := sha256.New()
	var acks []jetstream.PubAckFuture
	for {
		// A chunk of its own each: a publish may be sent again after a
		// later read.
		buf := make([]byte, info.Opts.ChunkSize)
		n, rerr := io.ReadFull(body, buf)
		if n > 0 {
			h.Write(buf[:n])
			ack, err := s.node.js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: buf[:n]})
			if err != nil {
				return err
			}
			acks = append(acks, ack)
			info.Chunks++
			info.Size += uint64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("reading it: %w", rerr)
		}
	}
	info.Digest = jetstream.GetObjectDigestValue(h)
	for _, ack := range acks {
		select {
		case <-ack.Ok():
		case err := <-ack.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
