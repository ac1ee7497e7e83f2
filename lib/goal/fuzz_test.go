package goal

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/jsonx"
)

// FuzzDecodeJournal: the decoder never panics; whatever it accepts encodes
// to canonical bytes that decode to the same journal and validate against
// schemas/goal.schema.json (the schema describes everything artgoal writes).
func FuzzDecodeJournal(f *testing.F) {
	for _, pat := range []string{"valid/*.json", "invalid/*.json"} {
		paths, _ := filepath.Glob(fixture(pat))
		for _, p := range paths {
			f.Add(readBytes(f, p))
		}
	}
	f.Add([]byte(`{"apiVersion":"art/v1alpha1","kind":"Goal"}`))
	schema := schematest.Compile(f, goalSchema)
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := DecodeJournal(data)
		if err != nil {
			return
		}
		canon, err := j.Marshal()
		if err != nil {
			t.Fatalf("accepted journal does not encode: %v", err)
		}
		j2, err := DecodeJournal(canon)
		if err != nil {
			t.Fatalf("canonical bytes of an accepted journal are refused: %v\n%s", err, canon)
		}
		canon2, _ := j2.Marshal()
		if !bytes.Equal(canon, canon2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", canon, canon2)
		}
		schematest.Validate(t, schema, "accepted journal", canon)
	})
}

// FuzzDecodeClosure: as FuzzDecodeJournal for GoalClosure documents.
func FuzzDecodeClosure(f *testing.F) {
	f.Add(readBytes(f, fixture("valid/closure.json")))
	paths, _ := filepath.Glob(fixture("invalid/closure-*.json"))
	for _, p := range paths {
		f.Add(readBytes(f, p))
	}
	schema := schematest.Compile(f, closureSchema)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeClosure(data)
		if err != nil {
			return
		}
		canon, _ := jsonx.MarshalIndent(c)
		if _, err := DecodeClosure(canon); err != nil {
			t.Fatalf("canonical bytes of an accepted closure are refused: %v", err)
		}
		schematest.Validate(t, schema, "accepted closure", canon)
	})
}

// FuzzParseEvidence: the TYPE:REF parser never panics, and what it accepts
// is valid evidence of the type it names.
func FuzzParseEvidence(f *testing.F) {
	for _, s := range []string{"note:x", "task:t1=queued", "task:t1", "event:sha256:" + hex64('a'), "url:https://a.example/b",
		"command:0:go test ./...", "command:3:sh -c 'exit 3'", "file:/nonexistent", "command:0@/nonexistent:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		e, err := ParseEvidence(spec)
		if err != nil {
			return
		}
		e.RecordedAt = t0
		if e.Type == EvidenceTask && e.State == "" {
			// task:ID leaves the state to the queue (Store.Sources), which
			// only ever gives a finished one.
			e.State = "succeeded"
		}
		if err := e.validate("e"); err != nil {
			t.Fatalf("ParseEvidence(%q) accepted invalid evidence: %v", spec, err)
		}
		if string(e.Type)+":" != spec[:len(e.Type)+1] {
			t.Fatalf("ParseEvidence(%q) gave type %q", spec, e.Type)
		}
	})
}

// FuzzSuccessor applies a random sequence of edits, legal and illegal, to
// a copy of a valid journal and asks CheckSuccessor about the result. The
// property: every accepted successor is legitimate by an independent
// oracle (valid; identity, non-goals and every recorded fact of prev still
// present; phase +0/+1; nothing new backdated; closure only when allowed and
// alone), and every candidate that lost a fact of prev is refused.
func FuzzSuccessor(f *testing.F) {
	s, _ := testStore(f)
	bases := []*Journal{
		stage(f, s, "s0", 0, false),
		stage(f, s, "s3", 3, false),
		stage(f, s, "s5", 5, false),
		stage(f, s, "s8", 8, false),
		func() *Journal {
			j := stage(f, s, "s8e", 8, false)
			return must[*Journal](f)(s.Check("s8e", j.Revision, "c1", note("x")))
		}(),
		stage(f, s, "closed", 8, true),
	}
	for i := range bases {
		f.Add(uint8(i), []byte{})
		for op := byte(0); op < numOps; op++ {
			f.Add(uint8(i), []byte{op, 1, 0})
		}
	}
	f.Add(uint8(1), []byte{4, 0, 0, 4, 0, 0})
	f.Add(uint8(4), []byte{10, 0, 0})
	f.Add(uint8(4), []byte{10, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, which uint8, ops []byte) {
		prev := bases[int(which)%len(bases)]
		before, _ := prev.Marshal()
		next := step(prev)
		for i := 0; i+2 < len(ops) && i < 3*8; i += 3 {
			applyOp(next, ops[i], ops[i+1], ops[i+2])
		}
		err := CheckSuccessor(prev, next)
		if after, _ := prev.Marshal(); !bytes.Equal(before, after) {
			t.Fatal("CheckSuccessor changed prev")
		}
		lost := lostFacts(prev, next)
		if err != nil {
			return
		}
		if len(lost) > 0 {
			t.Fatalf("accepted a successor that lost history: %v", lost)
		}
		if verr := next.Validate(); verr != nil {
			t.Fatalf("accepted an invalid successor: %v", verr)
		}
		if prev.Closed() {
			t.Fatal("accepted a successor of a closed goal")
		}
		if next.Revision != prev.Revision+1 || next.UpdatedAt.Before(prev.UpdatedAt) {
			t.Fatalf("accepted revision %d at %v after %d at %v", next.Revision, next.UpdatedAt, prev.Revision, prev.UpdatedAt)
		}
		if d := next.Phase.Index() - prev.Phase.Index(); d != 0 && d != 1 {
			t.Fatalf("accepted a phase move %s -> %s", prev.Phase, next.Phase)
		}
		for _, tm := range newTimes(prev, next) {
			if tm.Before(prev.UpdatedAt) {
				t.Fatalf("accepted backdated history at %v (prev updated %v)", tm, prev.UpdatedAt)
			}
		}
		if next.Closure != nil {
			if !next.AllSealed() || len(next.Checklist) == 0 {
				t.Fatal("accepted a closure before every phase was sealed")
			}
			for _, it := range next.Checklist {
				if len(it.Evidence) == 0 {
					t.Fatal("accepted a closure with an unevidenced item")
				}
			}
			if len(factsOf(next)) != len(factsOf(prev))+1 {
				t.Fatal("accepted a closing step that also changed other things")
			}
		}
		// What was accepted survives the store's encoding unchanged.
		data, _ := next.Marshal()
		back, derr := DecodeJournal(data)
		if derr != nil {
			t.Fatalf("accepted successor does not decode: %v", derr)
		}
		if again, _ := back.Marshal(); !bytes.Equal(again, data) {
			t.Fatal("accepted successor does not round-trip")
		}
	})
}

const numOps = 20

// applyOp performs one edit chosen by op on n; a and b pick targets.
func applyOp(n *Journal, op, a, b byte) {
	now := n.UpdatedAt
	item := func() *ChecklistItem {
		if len(n.Checklist) == 0 {
			return nil
		}
		return &n.Checklist[int(a)%len(n.Checklist)]
	}
	phase := Phases[int(a)%len(Phases)]
	switch op % numOps {
	case 0: // append item evidence (legal)
		if it := item(); it != nil {
			it.Evidence = append(it.Evidence, Evidence{Type: EvidenceNote, Text: fmt.Sprint("n", b), RecordedAt: now})
		}
	case 1: // append backdated evidence
		if it := item(); it != nil {
			it.Evidence = append(it.Evidence, Evidence{Type: EvidenceNote, Text: "old", RecordedAt: n.CreatedAt.Add(time.Duration(b) * time.Second)})
		}
	case 2: // remove the last item evidence
		if it := item(); it != nil && len(it.Evidence) > 0 {
			it.Evidence = it.Evidence[:len(it.Evidence)-1]
		}
	case 3: // edit item evidence
		if it := item(); it != nil && len(it.Evidence) > 0 {
			e := &it.Evidence[int(b)%len(it.Evidence)]
			e.Note = fmt.Sprint("edited ", b)
		}
	case 4: // seal the current phase (legal once)
		if !n.Sealed(n.Phase) {
			n.Receipts[n.Phase] = Receipt{Summary: fmt.Sprint("s", b), Evidence: []Evidence{{Type: EvidenceNote, Text: "x", RecordedAt: now}}, SealedAt: now}
			if i := n.Phase.Index(); i < len(Phases)-1 {
				n.Phase = Phases[i+1]
			}
		}
	case 5: // jump to any phase
		n.Phase = phase
	case 6: // identity and non-goals
		switch b % 5 {
		case 0:
			n.Title += "!"
		case 1:
			n.ID += "x"
		case 2:
			n.CreatedAt = n.CreatedAt.Add(time.Nanosecond)
		case 3:
			n.NonGoals = append(n.NonGoals, "more")
		case 4:
			n.NonGoals = n.NonGoals[:0]
		}
	case 7: // append a checklist item (legal)
		n.Checklist = append(n.Checklist, ChecklistItem{ID: fmt.Sprint("x", a, "-", b, "-", len(n.Checklist)), Text: "more", Evidence: []Evidence{}})
	case 8: // delete a receipt
		delete(n.Receipts, phase)
	case 9: // rewrite a receipt summary
		if r, ok := n.Receipts[phase]; ok {
			r.Summary += "!"
			n.Receipts[phase] = r
		}
	case 10: // close (legal only when closable and alone)
		if n.Closure == nil {
			n.Closure = &Closure{ClosureBody: sampleClosure().ClosureBody, ClosedAt: now}
		}
	case 11: // reopen
		n.Closure = nil
	case 12: // edit or remove a checklist item
		if it := item(); it != nil {
			if b%2 == 0 {
				it.Text += "!"
			} else {
				n.Checklist = slices.Delete(n.Checklist, int(a)%len(n.Checklist), int(a)%len(n.Checklist)+1)
			}
		}
	case 13: // swap two pieces of receipt evidence
		if r, ok := n.Receipts[phase]; ok && len(r.Evidence) > 1 {
			r.Evidence[0], r.Evidence[1] = r.Evidence[1], r.Evidence[0]
		}
	case 14: // revision
		n.Revision += int64(b%3) - 1
	case 15: // append evidence to a sealed receipt (legal)
		if r, ok := n.Receipts[phase]; ok {
			r.Evidence = append(r.Evidence, Evidence{Type: EvidenceTask, Task: "t1", State: "succeeded", RecordedAt: now})
			n.Receipts[phase] = r
		}
	case 16: // updated_at moves
		n.UpdatedAt = n.UpdatedAt.Add(time.Duration(int(b)-128) * time.Second)
	case 17: // move a seal time
		if r, ok := n.Receipts[phase]; ok {
			r.SealedAt = r.SealedAt.Add(time.Duration(int(b)-128) * time.Millisecond)
			n.Receipts[phase] = r
		}
	case 18: // append verified task evidence (legal)
		if it := item(); it != nil {
			it.Evidence = append(it.Evidence, Evidence{Type: EvidenceTask, Task: "t2", State: "failed", RecordedAt: now,
				FromQueue: &QueueCheck{Dir: "/q", Seq: uint64(b) + 1, Attempts: int(a), UpdatedAt: now}})
		}
	case 19: // rewrite what a verified record says, or claim one afterwards
		for _, evs := range evidenceLists(n) {
			for k := range evs {
				switch e := &evs[k]; {
				case e.FromQueue != nil:
					e.FromQueue.Seq += uint64(b%3) + 1
					return
				case e.Type == EvidenceTask && b%2 == 0:
					e.FromQueue = &QueueCheck{Dir: "/q", Seq: 1, UpdatedAt: now}
					return
				}
			}
		}
	}
}

// evidenceLists is every evidence list of j, items first, then receipts in
// phase order (writes through the returned slices reach j).
func evidenceLists(j *Journal) [][]Evidence {
	var out [][]Evidence
	for i := range j.Checklist {
		out = append(out, j.Checklist[i].Evidence)
	}
	for _, p := range Phases {
		if r, ok := j.Receipts[p]; ok {
			out = append(out, r.Evidence)
		}
	}
	return out
}

// factsOf lists everything a journal asserts about its history, each as a
// string; a legitimate successor asserts every fact its predecessor did.
func factsOf(j *Journal) map[string]bool {
	m := map[string]bool{}
	enc := func(v any) string { b, _ := jsonx.Marshal(v); return string(b) }
	m["identity="+enc([]any{j.APIVersion, j.Kind, j.ID, j.Title, j.CreatedAt})] = true
	m["non_goals="+enc(j.NonGoals)] = true
	for i, it := range j.Checklist {
		m[fmt.Sprintf("item[%d]=%s", i, enc([]string{it.ID, it.Text}))] = true
		for k, e := range it.Evidence {
			m[fmt.Sprintf("item[%d].evidence[%d]=%s", i, k, enc(e))] = true
		}
	}
	for p, r := range j.Receipts {
		m[fmt.Sprintf("receipt[%s]=%s", p, enc([]any{r.Summary, r.SealedAt}))] = true
		for k, e := range r.Evidence {
			m[fmt.Sprintf("receipt[%s].evidence[%d]=%s", p, k, enc(e))] = true
		}
	}
	if j.Closure != nil {
		m["closure="+enc(j.Closure)] = true
	}
	return m
}

func lostFacts(prev, next *Journal) []string {
	have := factsOf(next)
	var lost []string
	for f := range factsOf(prev) {
		if !have[f] {
			lost = append(lost, f)
		}
	}
	return lost
}

// newTimes lists the timestamps of entries next has and prev does not.
func newTimes(prev, next *Journal) []time.Time {
	var out []time.Time
	for i, it := range next.Checklist {
		from := 0
		if i < len(prev.Checklist) {
			from = len(prev.Checklist[i].Evidence)
		}
		for _, e := range it.Evidence[min(from, len(it.Evidence)):] {
			out = append(out, e.RecordedAt)
		}
	}
	for p, r := range next.Receipts {
		pr, had := prev.Receipts[p]
		if !had {
			out = append(out, r.SealedAt)
		}
		for _, e := range r.Evidence[min(len(pr.Evidence), len(r.Evidence)):] {
			out = append(out, e.RecordedAt)
		}
	}
	if next.Closure != nil && prev.Closure == nil {
		out = append(out, next.Closure.ClosedAt)
	}
	return out
}
