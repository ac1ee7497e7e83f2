package natsq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

// Message headers the backend sets.
const (
	hdrMsgID       = "Nats-Msg-Id"
	hdrExpectSubj  = "Nats-Expected-Last-Subject-Sequence"
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	hdrTTL         = "Nats-TTL"
)

// out is one proposal ready to publish: its subject, record and condition.
type out struct {
	ev      *queue.Event // a copy, or the caller's own (Proposal.Owned); Seq assigned from the acknowledgement
	subject string
	data    []byte // the record, as queue.AppendRecord writes it (seq 0)
	id      string // Nats-Msg-Id
	task    string // "" for log-level events
	expect  uint64
	checked bool // carries Nats-Expected-Last-Subject-Sequence
	// follows is the index of an earlier proposal of the same task in the
	// same call, or -1.
	follows int
}

// Append implements queue.Backend. One proposal is one publish; several are
// one JetStream atomic batch, all of them or none: a batch larger than the
// server's atomic limit (MaxBatch, or what the server says) is refused,
// never appended in parts. It returns once the server has acknowledged
// the events, which is when they are stored: on disk at once only if the
// server runs with sync_interval always (docs/artq-nats.md).
//
// A publish whose outcome is unknown (no acknowledgement: a timeout, a lost
// connection) is sent again, byte for byte and with the same message ids and
// conditions, until RetryTimeout. If the first copy did land, the server
// answers the second with a failed condition or a duplicate, and the backend
// then finds its own record right after the expected event and reports
// success instead of a conflict.
func (b *Backend) Append(ctx context.Context, ps []queue.Proposal) ([]*queue.Event, error) {
	if b.opts.ReadOnly {
		return nil, queue.ErrReadOnly
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	outs, err := b.prepare(ps)
	if err != nil {
		return nil, err
	}
	if limit := b.batchLimit(); len(outs) > limit {
		return nil, b.tooLarge(len(outs), limit)
	}
	if err := b.publish(ctx, outs); err != nil {
		return nil, err
	}
	return events(outs), nil
}

// events are the appended events: prepare's copies, or the caller's own
// where it handed them over (Proposal.Owned).
func events(outs []*out) []*queue.Event {
	evs := make([]*queue.Event, len(outs))
	for i, o := range outs {
		evs[i] = o.ev
	}
	return evs
}

// prepare encodes the proposals and derives each one's subject, message id
// and condition.
func (b *Backend) prepare(ps []queue.Proposal) ([]*out, error) {
	now := time.Now().UTC()
	max := int(b.nc.MaxPayload())
	first := map[string]int{}
	runs := map[string]int{}
	outs := make([]*out, len(ps))
	for i, p := range ps {
		if p.Event == nil || p.Event.Seq != 0 {
			return nil, exitcode.Errorf(exitcode.Internal, "append: proposal %d has no event or a sequence already", i)
		}
		o := &out{ev: p.Event, follows: -1}
		if !p.Owned {
			c := *p.Event
			o.ev = &c
		}
		if o.ev.Time.IsZero() {
			o.ev.Time = now
		}
		switch o.ev.Type {
		case queue.EventCompacted, queue.EventTruncated:
			if o.ev.Task != "" {
				return nil, exitcode.Errorf(exitcode.Internal, "append: a %s event names no task", o.ev.Type)
			}
			o.subject = b.logSubj
			o.id = "log." + string(o.ev.Type) + "." + strconv.FormatUint(o.ev.Through, 10) + "." + strconv.FormatInt(o.ev.Time.UnixNano(), 10)
		default:
			// Task ids are subject tokens: queue.ValidName keeps them to
			// [A-Za-z0-9_-], so no id can contain '.', '*' or '>'.
			if err := queue.ValidName("task", o.ev.Task); err != nil {
				return nil, err
			}
			o.task = o.ev.Task
			o.subject = b.taskPre + o.ev.Task
			if j, ok := first[o.task]; ok {
				// Follows an earlier proposal of this call: unconditional,
				// and numbered so its id differs from its predecessor's.
				runs[o.task]++
				o.follows = j
				o.id = outs[j].id + "." + strconv.Itoa(runs[o.task])
			} else {
				first[o.task] = i
				cond := "any"
				if !p.Any {
					o.checked, o.expect = true, p.Expect
					cond = strconv.FormatUint(p.Expect, 10)
				}
				// Task, attempt and type say what the event is; the expected
				// sequence tells a second start of the same attempt after a
				// requeue from a retried publish of the first.
				o.id = o.task + "." + strconv.Itoa(o.ev.Attempt) + "." + string(o.ev.Type) + "." + cond
			}
		}
		o.data = queue.AppendRecord(nil, o.ev)
		if size := len(o.data) + len(o.subject) + 200; size > max {
			return nil, exitcode.Errorf(exitcode.Usage, "task %s: a %s event of %d bytes is larger than the NATS server's max_payload (%d bytes): raise max_payload on the server or send a smaller manifest", o.ev.Task, o.ev.Type, len(o.data), max)
		}
		outs[i] = o
	}
	return outs, nil
}

// tooLarge refuses an append of more events than one JetStream atomic
// batch may hold: appended in parts it would not be all or nothing (a
// crash between two parts would leave a partial batch), so nothing is
// appended.
func (b *Backend) tooLarge(n, limit int) error {
	return exitcode.Errorf(exitcode.Usage, "append to %s: a batch of %d events is larger than the server's atomic batch limit of %d; nothing was appended (raise jetstream { limits { batch { max_msgs } } } on the server, or split the batch)", b.Location(), n, limit)
}

// publish appends outs (one message, or one atomic batch) and assigns their
// sequences, retrying while the outcome is in doubt.
func (b *Backend) publish(ctx context.Context, outs []*out) error {
	return b.publishFrom(ctx, outs, false)
}

// publishFrom is publish; doubt says an earlier attempt may have landed.
func (b *Backend) publishFrom(ctx context.Context, outs []*out, doubt bool) error {
	window := b.opts.RetryTimeout
	for _, o := range outs {
		if !o.checked && o.follows < 0 {
			// Only the stream's duplicate window recognises a second copy
			// of an unconditional message: stay well inside it.
			window = min(window, b.dupWindow()/2)
			break
		}
	}
	deadline := time.Now().Add(window)
	wait := 50 * time.Millisecond
	var last error
	for {
		ack, err := b.send(ctx, outs)
		if err == nil && ack.Error == nil {
			if ack.Duplicate {
				// Only a single publish is answered this way (a batch with a
				// known id is refused): the id is one the stream saw within
				// its duplicate window, ours or a twin's.
				ok, lerr := b.landedAt(ctx, outs, ack.Seq)
				switch {
				case ok:
					return nil
				case lerr == nil:
					return b.stale(ctx, outs, nil)
				case !retryable(lerr):
					return b.appendErr(lerr, true)
				}
				doubt, last = true, lerr // look again after the pause
				goto pause
			}
			n := uint64(len(outs))
			if len(outs) > 1 && uint64(ack.Count) != n {
				return exitcode.Errorf(exitcode.Internal, "append to %s: the server committed %d of a batch of %d", b.Location(), ack.Count, n)
			}
			for i, o := range outs {
				o.ev.Seq = ack.Seq - n + 1 + uint64(i)
			}
			return nil
		}
		if err == nil {
			e := ack.Error
			switch {
			case e.stale() || e.ErrCode == errBatchDuplicate:
				if doubt || e.ErrCode == errBatchDuplicate {
					ok, lerr := b.landed(ctx, outs)
					if ok {
						return nil
					}
					if lerr != nil {
						if !retryable(lerr) {
							return b.appendErr(lerr, true)
						}
						doubt, last = true, lerr
						goto pause
					}
				}
				return b.stale(ctx, outs, e)
			case e.ErrCode == errMsgTooLarge:
				return exitcode.Errorf(exitcode.Usage, "append to %s: an event is larger than the stream allows: %w", b.Location(), e)
			case e.ErrCode == errBatchTooLarge && len(outs) > 1:
				// The server's max_batch_size is smaller than MaxBatch: learn
				// it and let the caller split. Nothing was appended.
				if n, ok := parseBatchLimit(e); ok && n < len(outs) {
					b.maxBatch.Store(int64(n))
					return b.tooLarge(len(outs), n)
				}
				return exitcode.Errorf(exitcode.Internal, "append to %s: %w", b.Location(), e)
			case e.transient():
				doubt = doubt || e.ErrCode == errDuplicateInProcess
				last = e
			default:
				return exitcode.Errorf(exitcode.Internal, "append to %s: %w", b.Location(), e)
			}
		} else {
			if !retryable(err) {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				// Closed while waiting for the answer: it may have landed.
				return b.appendErr(err, true)
			}
			// A timeout may mean the message landed and its acknowledgement
			// was lost; a disconnected client or no responders mean it was
			// not sent.
			doubt = doubt || inDoubt(err)
			last = err
		}
	pause:
		if ctx.Err() != nil {
			return b.appendErr(context.Cause(ctx), doubt)
		}
		if time.Now().Add(wait).After(deadline) {
			return b.appendErr(fmt.Errorf("gave up after %s: %w", window, last), doubt)
		}
		select {
		case <-ctx.Done():
			return b.appendErr(context.Cause(ctx), doubt)
		case <-b.closed:
			return b.appendErr(errors.New("backend closed"), doubt)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// batchLimit is the largest batch to send as one atomic publish.
func (b *Backend) batchLimit() int { return int(b.maxBatch.Load()) }

func parseBatchLimit(e *apiError) (int, bool) {
	var n int
	_, err := fmt.Sscanf(e.Description, "atomic publish batch is too large: %d", &n)
	return n, err == nil && n > 0
}

// appendErr is an append that failed for a reason other than its condition.
func (b *Backend) appendErr(err error, doubt bool) error {
	if doubt {
		return exitcode.Errorf(exitcode.Internal, "append to %s: %w (it may or may not have been recorded: the next catch-up shows which, and a retried append is recognised)", b.Location(), err)
	}
	return exitcode.Errorf(exitcode.Internal, "append to %s: %w", b.Location(), err)
}

// send publishes outs once: a plain publish for one, an atomic batch under a
// fresh batch id for several.
func (b *Backend) send(ctx context.Context, outs []*out) (*pubAck, error) {
	rctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	msg := func(o *out) *nats.Msg {
		m := &nats.Msg{Subject: o.subject, Data: o.data, Header: nats.Header{}}
		m.Header.Set(hdrMsgID, o.id)
		if o.checked {
			m.Header.Set(hdrExpectSubj, strconv.FormatUint(o.expect, 10))
		}
		return m
	}
	if len(outs) == 1 {
		r, err := b.nc.RequestMsgWithContext(rctx, msg(outs[0]))
		if err != nil {
			return nil, err
		}
		return decodePubAck(r)
	}
	id := nuid.Next()
	for i, o := range outs[:len(outs)-1] {
		m := msg(o)
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		if err := b.nc.PublishMsg(m); err != nil {
			return nil, err
		}
	}
	m := msg(outs[len(outs)-1])
	m.Header.Set(hdrBatchID, id)
	m.Header.Set(hdrBatchSeq, strconv.Itoa(len(outs)))
	m.Header.Set(hdrBatchCommit, "1")
	r, err := b.nc.RequestMsgWithContext(rctx, m)
	if err != nil {
		return nil, err
	}
	return decodePubAck(r)
}

// landed reports whether outs are already in the stream, consecutively, as
// an earlier copy of this very publish would have left them: the first one
// is the first message on its subject after its expected event.
func (b *Backend) landed(ctx context.Context, outs []*out) (bool, error) {
	o := outs[0]
	m, err := b.msgGet(ctx, b.stream, msgGetReq{Seq: o.expect + 1, NextFor: o.subject})
	if err != nil || m == nil {
		return false, err
	}
	return b.landedAt(ctx, outs, m.Seq)
}

// landedAt reports whether outs are stored from seq on, byte for byte; if so
// it assigns their sequences.
func (b *Backend) landedAt(ctx context.Context, outs []*out, seq uint64) (bool, error) {
	for i, o := range outs {
		m, err := b.msgGet(ctx, b.stream, msgGetReq{Seq: seq + uint64(i)})
		if err != nil {
			return false, err
		}
		if m == nil || m.Seq != seq+uint64(i) || m.Subject != o.subject || !bytes.Equal(m.Data, o.data) {
			return false, nil
		}
	}
	for i, o := range outs {
		o.ev.Seq = seq + uint64(i)
	}
	b.recognised.Add(1)
	return true, nil
}

// stale builds the conflict error for a refused condition, naming the task
// and the sequence its latest event really has.
func (b *Backend) stale(ctx context.Context, outs []*out, e *apiError) error {
	var cands []*out
	for _, o := range outs {
		if o.checked {
			cands = append(cands, o)
		}
	}
	if len(cands) == 0 {
		// Only a duplicate id with another payload gets here: a twin of this
		// event (same task, attempt, type and condition) won.
		o := outs[0]
		have, _ := b.lastSeq(ctx, o.subject)
		return &queue.StaleError{Task: o.task, Expect: o.expect, Have: have}
	}
	if len(cands) == 1 && e != nil {
		if have, ok := e.haveSeq(); ok {
			return &queue.StaleError{Task: cands[0].task, Expect: cands[0].expect, Have: have}
		}
	}
	for _, o := range cands {
		have, err := b.lastSeq(ctx, o.subject)
		if err != nil {
			break
		}
		if have != o.expect {
			return &queue.StaleError{Task: o.task, Expect: o.expect, Have: have}
		}
	}
	// The conflicting append was undone meanwhile? Not possible for an
	// append-only stream; report the first condition.
	return &queue.StaleError{Task: cands[0].task, Expect: cands[0].expect, Have: cands[0].expect}
}

// lastSeq is the sequence of the latest message on subject, 0 if none.
func (b *Backend) lastSeq(ctx context.Context, subject string) (uint64, error) {
	m, err := b.msgGet(ctx, b.stream, msgGetReq{LastFor: subject})
	if err != nil || m == nil {
		return 0, err
	}
	return m.Seq, nil
}
