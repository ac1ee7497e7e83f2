package natsq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// The few JetStream API calls on the hot path are made directly rather than
// through nats.go's jetstream package, whose Publish folds a stale condition,
// a duplicate and a lost acknowledgement into errors that cannot be told
// apart, and whose ordered consumer recreates its server-side consumer on
// every Fetch. Everything else (streams, buckets, purges) goes through
// jetstream.

// JetStream API error codes the backend acts on (nats-server errors.json).
const (
	errWrongLastSeq         = 10071 // wrong last sequence: {seq}
	errWrongLastSeqConstant = 10164 // wrong last sequence (subject busy in a batch)
	errNoMessageFound       = 10037
	errStreamNotFound       = 10059
	errMsgTooLarge          = 10054
	errDuplicateInProcess   = 10158 // duplicate message id is in process
	errBatchDuplicate       = 10201 // atomic publish batch contains duplicate message id
	errBatchIncomplete      = 10176
	errBatchTooLarge        = 10199
	errBatchTooManyInflight = 10210
	errNotLeader            = 10009 // JSClusterNotLeaderErr
	errNoLeader             = 10008 // JSClusterNotAvailErr
)

// apiError is an error member of a JetStream API response.
type apiError struct {
	Code        int    `json:"code"`
	ErrCode     int    `json:"err_code"`
	Description string `json:"description"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (error %d)", e.Description, e.ErrCode)
}

// haveSeq is the sequence a "wrong last sequence: N" error reports, or 0.
func (e *apiError) haveSeq() (uint64, bool) {
	if e.ErrCode != errWrongLastSeq {
		return 0, false
	}
	_, n, ok := strings.Cut(e.Description, ": ")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(n), 10, 64)
	return v, err == nil
}

// stale reports whether the server refused a publish's per-subject condition.
func (e *apiError) stale() bool {
	return e.ErrCode == errWrongLastSeq || e.ErrCode == errWrongLastSeqConstant
}

// transient reports whether the same request may succeed if sent again: a
// leader election, a busy server, a duplicate still being processed.
func (e *apiError) transient() bool {
	switch e.ErrCode {
	case errNotLeader, errNoLeader, errDuplicateInProcess, errBatchTooManyInflight, errBatchIncomplete:
		return true
	}
	return false
}

// pubAck is the answer to a publish into a stream.
type pubAck struct {
	Stream    string    `json:"stream"`
	Seq       uint64    `json:"seq"`
	Duplicate bool      `json:"duplicate,omitempty"`
	Batch     string    `json:"batch,omitempty"`
	Count     int       `json:"count,omitempty"`
	Error     *apiError `json:"error,omitempty"`
}

func decodePubAck(m *nats.Msg) (*pubAck, error) {
	if len(m.Data) == 0 {
		if st := m.Header.Get("Status"); st != "" {
			return nil, fmt.Errorf("server answered status %s %s", st, m.Header.Get("Description"))
		}
		return nil, errors.New("empty acknowledgement")
	}
	var a pubAck
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return nil, fmt.Errorf("undecodable acknowledgement: %w", err)
	}
	if a.Error == nil && a.Seq == 0 {
		return nil, errors.New("acknowledgement without a sequence")
	}
	return &a, nil
}

// storedMsg is one message as the stream holds it.
type storedMsg struct {
	Subject string      `json:"subject"`
	Seq     uint64      `json:"seq"`
	Hdrs    []byte      `json:"hdrs,omitempty"`
	Data    []byte      `json:"data,omitempty"`
	Time    time.Time   `json:"time"`
	Header  nats.Header `json:"-"`
}

// msgGetReq asks for one message: by sequence, the first on a subject at or
// after a sequence, or the last on a subject.
type msgGetReq struct {
	Seq     uint64 `json:"seq,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
}

// msgGet asks the stream's leader (never a replica, which may lag) for one
// message. It returns nil, nil when there is none; errStream when the stream
// does not exist.
func (b *Backend) msgGet(ctx context.Context, stream string, req msgGetReq) (*storedMsg, error) {
	data, _ := json.Marshal(req)
	rctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	m, err := b.nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET."+stream, data)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, errNoStream
	}
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *storedMsg `json:"message"`
		Error   *apiError  `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, fmt.Errorf("undecodable answer to a message get: %w", err)
	}
	if resp.Error != nil {
		switch resp.Error.ErrCode {
		case errNoMessageFound:
			return nil, nil
		case errStreamNotFound:
			return nil, errNoStream
		}
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, errors.New("empty answer to a message get")
	}
	if len(resp.Message.Hdrs) > 0 {
		h, err := decodeHeaders(resp.Message.Hdrs)
		if err != nil {
			return nil, err
		}
		resp.Message.Header = h
	}
	return resp.Message, nil
}

var errNoStream = errors.New("stream not found")

// decodeHeaders parses a NATS/1.0 header block.
func decodeHeaders(raw []byte) (nats.Header, error) {
	h := nats.Header{}
	s := string(raw)
	line, rest, ok := strings.Cut(s, "\r\n")
	if !ok || !strings.HasPrefix(line, "NATS/1.0") {
		return nil, errors.New("malformed message headers")
	}
	for rest != "" {
		line, rest, _ = strings.Cut(rest, "\r\n")
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, errors.New("malformed message header line")
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}

// ackMeta parses the reply subject of a consumer delivery
// ($JS.ACK.[domain.acchash.]stream.consumer.delivered.sseq.cseq.ts.pending[.token])
// into the stream sequence and the number of messages still pending.
func ackMeta(reply string) (sseq, pending uint64, ok bool) {
	if !strings.HasPrefix(reply, "$JS.ACK.") {
		return 0, 0, false
	}
	toks := strings.Split(reply, ".")
	var base int
	switch {
	case len(toks) == 9:
		base = 2 // $JS ACK stream consumer delivered sseq cseq ts pending
	case len(toks) >= 11:
		base = 4 // $JS ACK domain acchash stream consumer ...
	default:
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(toks[base+3], 10, 64)
	p, err2 := strconv.ParseUint(toks[base+6], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return s, p, true
}

// retryable reports whether the same request may be sent again: it was
// certainly not processed (notSent), or its outcome is unknown (inDoubt).
func retryable(err error) bool { return notSent(err) || inDoubt(err) }

// notSent: the request never reached a stream (no connection, nothing
// listening).
func notSent(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrDisconnected)
}

// inDoubt: the request may have been processed with its answer lost.
func inDoubt(err error) bool {
	return errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrStaleConnection)
}
