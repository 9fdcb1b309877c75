package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBodyGrace is how long a body no manifest names stays in the object
// store when SyncOptions.BodyGrace is 0.
const DefaultBodyGrace = time.Hour

// collectLoop runs the collector every quarter of the grace, and never
// more often than each minute, until the sync closes.
func (s *Sync) collectLoop() {
	defer s.loops.Done()
	t := time.NewTicker(max(time.Minute, s.grace/4))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
		n, err := s.collect(ctx)
		cancel()
		if err != nil {
			s.log.Warn("fleet: removing bodies no manifest names", "err", err)
		} else if n > 0 {
			s.log.Info("fleet: removed bodies no manifest names", "bodies", n)
		}
	}
}

// collect removes from the object store the bodies that no manifest has
// named for the whole grace, as this node saw them, and returns how many.
// A body is stored before the manifest that names it is written (the
// atomic publish): a body of a publish under way is named within
// publishTimeout, far less than the grace, and a publish that trusted a
// body to be there (hasBody) names it within half the grace. Every node
// collects; removing a body twice does no harm.
func (s *Sync) collect(ctx context.Context) (int, error) {
	infos, err := s.obj.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing the object store: %w", err)
	}
	var doomed []string
	s.mu.Lock()
	now, seen := s.now(), map[string]bool{}
	for _, info := range infos {
		h := info.Name
		seen[h] = true
		if s.named[h] > 0 {
			delete(s.unnamed, h)
			continue
		}
		at, ok := s.unnamed[h]
		if !ok {
			s.unnamed[h] = now
		} else if now.Sub(at) >= s.grace && now.Sub(s.put[h]) >= s.grace {
			doomed = append(doomed, h)
		}
	}
	for h := range s.unnamed {
		if !seen[h] {
			delete(s.unnamed, h)
		}
	}
	s.mu.Unlock()
	n := 0
	for _, h := range doomed {
		removed, err := s.removeBody(ctx, h)
		if err != nil {
			return n, fmt.Errorf("removing the body %s: %w", h, err)
		}
		s.mu.Lock()
		delete(s.unnamed, h)
		s.mu.Unlock()
		if removed {
			n++
		}
	}
	return n, nil
}

// removeBody removes the body hash from the object store unless it was
// stored again since the collector listed it: the store's Delete would
// remove a body a publish under way has just put again. The body's
// description is replaced by a deleted one with compare-and-set on its
// sequence (the object store's own form: a deleted object's description),
// then its chunks are purged.
func (s *Sync) removeBody(ctx context.Context, hash string) (bool, error) {
	subject := "$O." + BodyStore + ".M." + base64.URLEncoding.EncodeToString([]byte(hash))
	msg, err := s.bodyStream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		return false, fmt.Errorf("reading its description: %w", err)
	}
	if info.Deleted {
		return false, nil
	}
	nuid := info.NUID
	info.Deleted, info.Size, info.Chunks, info.Digest = true, 0, 0, ""
	tomb := nats.NewMsg(subject)
	tomb.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	tomb.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(msg.Sequence, 10))
	if tomb.Data, err = json.Marshal(info); err != nil {
		return false, err
	}
	if _, err := s.node.js.PublishMsg(ctx, tomb); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return false, nil // stored again meanwhile: kept
		}
		return false, err
	}
	err = s.bodyStream.Purge(ctx, jetstream.WithPurgeSubject("$O."+BodyStore+".C."+nuid))
	return true, err
}
