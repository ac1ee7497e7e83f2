package natsq

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
)

// streamInfoReply is a real server's stream info reply for a queue with a
// few events, and one for a stream that does not exist.
func streamInfoReplies(t testing.TB) (found, missing []byte) {
	srv := natstest.Start(t, natstest.Options{})
	b := open(t, srv.URL(), "info", Options{})
	for i := range 3 {
		ev := &queue.Event{Time: time.Now().UTC(), Type: queue.EventEnqueued, Task: fmt.Sprintf("t%d", i), MaxAttempts: 1, Manifest: []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"true"}`)}
		if _, err := b.Append(bg, []queue.Proposal{{Event: ev}}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(stream string) []byte {
		m, err := b.nc.Request("$JS.API.STREAM.INFO."+stream, nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return m.Data
	}
	return get(b.stream), get("ART_nosuchqueue")
}

// decodeStreamState reads what a full decode of the reply reads.
func TestDecodeStreamState(t *testing.T) {
	found, missing := streamInfoReplies(t)
	var full struct {
		State *streamState `json:"state"`
	}
	if err := json.Unmarshal(found, &full); err != nil || full.State == nil {
		t.Fatalf("full decode: %v", err)
	}
	st, err := decodeStreamState(found)
	if err != nil {
		t.Fatal(err)
	}
	if *st != *full.State || st.LastSeq != 3 {
		t.Fatalf("state %+v, full decode %+v (want last_seq 3)", *st, *full.State)
	}
	if _, err := decodeStreamState(missing); !errors.Is(err, errNoStream) {
		t.Fatalf("missing stream: %v, want errNoStream", err)
	}
	for _, bad := range []string{``, `{`, `{"state":1}`, `{"error":{"err_code":"x"}}`, `{"state":{"last_seq":"x"}}`, `[]`} {
		if st, err := decodeStreamState([]byte(bad)); err == nil {
			t.Errorf("%q: decoded %+v, want an error", bad, st)
		}
	}
}

// BenchmarkDecodeStreamState: the picked decode against a full decode of
// the same reply (the client's CPU per stream-info request of a read).
func BenchmarkDecodeStreamState(b *testing.B) {
	found, _ := streamInfoReplies(b)
	b.Run("picked", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeStreamState(found); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			var resp struct {
				State *streamState `json:"state"`
				Error *apiError    `json:"error"`
			}
			if err := json.Unmarshal(found, &resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
