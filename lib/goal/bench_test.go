package goal

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/art-runtime/art/lib/fsx"
)

// BenchmarkStoreCheck is one durable mutation: lock, load and validate the
// whole journal, clone, append, check the successor, encode, and write
// temp → fsync → rename → fsync dir. A fresh goal every 50 steps keeps the
// journal at a realistic size (genesis to ~50 pieces of evidence).
func BenchmarkStoreCheck(b *testing.B) {
	s, _ := testStore(b)
	var j *Journal
	for i := 0; b.Loop(); i++ {
		if i%50 == 0 {
			b.StopTimer()
			j = stage(b, s, fmt.Sprint("g", i), 4, false)
			b.StartTimer()
		}
		var err error
		if j, err = s.Check(j.ID, j.Revision, "c1", note("bench")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFileBaseline is the floor BenchmarkStoreCheck stands on:
// fsx.WriteFile of a journal of the same size, nothing else.
func BenchmarkWriteFileBaseline(b *testing.B) {
	s, _ := testStore(b)
	j := stage(b, s, "g", 4, false)
	for range 25 {
		j = must[*Journal](b)(s.Check("g", j.Revision, "c1", note("bench")))
	}
	data, _ := j.Marshal()
	path := s.Path("baseline")
	for b.Loop() {
		if err := fsx.WriteFile(path, data, fsx.FileMode); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJournal is strict decoding plus full validation of a
// closed journal; BenchmarkDecodeJournalBaseline is plain encoding/json
// of the same bytes into the same type (no strictness, no validation).
func BenchmarkDecodeJournal(b *testing.B) {
	data := readBytes(b, fixture("valid/closed.json"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeJournal(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJournalBaseline(b *testing.B) {
	data := readBytes(b, fixture("valid/closed.json"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var j Journal
		if err := json.Unmarshal(data, &j); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckSuccessor is the history check alone, for a step that
// seals a phase of a journal with every evidence type.
func BenchmarkCheckSuccessor(b *testing.B) {
	s, _ := testStore(b)
	prev := stage(b, s, "g", 5, false)
	next := step(prev)
	next.Receipts[prev.Phase] = Receipt{Summary: "s", Evidence: []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: next.UpdatedAt}}, SealedAt: next.UpdatedAt}
	next.Phase = Phases[prev.Phase.Index()+1]
	for b.Loop() {
		if err := CheckSuccessor(prev, next); err != nil {
			b.Fatal(err)
		}
	}
}
