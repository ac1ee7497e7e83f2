package goal

import (
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestCheckID(t *testing.T) {
	tests := []struct {
		id  string
		why string // "" = valid
	}{
		{"g", ""},
		{"widget-v2.1_final", ""},
		{"0", ""},
		{strings.Repeat("a", 128), ""},
		{"", "empty"},
		{strings.Repeat("a", 129), "longer than 128"},
		{".", "must start with a letter or digit"},
		{"..", "must start with a letter or digit"},
		{".hidden", "must start with a letter or digit"},
		{"-flag", "must start with a letter or digit"},
		{"a/b", `character '/' not allowed`},
		{"a b", `character ' ' not allowed`},
		{"a\x00b", "byte 0x00 not allowed"},
		{"a\nb", "byte 0x0a not allowed"},
		{"é", "must start with a letter or digit"},
		{"aé", "byte 0xc3 not allowed"},
		{"a:b", `character ':' not allowed`},
	}
	for _, tt := range tests {
		err := CheckID("goal id", tt.id)
		if tt.why == "" {
			if err != nil {
				t.Errorf("CheckID(%q) = %v; want valid", tt.id, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), IDRule) {
			t.Errorf("CheckID(%q) = %v; want %q and the rule", tt.id, err, tt.why)
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("CheckID(%q) exit %d; want 2", tt.id, exitcode.Of(err))
		}
	}
}

func TestValidate(t *testing.T) {
	s, _ := testStore(t)
	base := stage(t, s, "g", 5, false) // phase verify, every evidence type in build
	closed := stage(t, s, "c", 8, true)
	at := func(j *Journal) time.Time { return j.UpdatedAt }
	tests := []struct {
		name   string
		base   *Journal
		mutate func(j *Journal)
		path   string // "" = valid
		msg    string
	}{
		{"valid", base, func(j *Journal) {}, "", ""},
		{"valid closed", closed, func(j *Journal) {}, "", ""},
		{"apiVersion", base, func(j *Journal) { j.APIVersion = "art/v2" }, "journal.apiVersion", "want"},
		{"id", base, func(j *Journal) { j.ID = "../g" }, "journal.id", "must start"},
		{"blank title", base, func(j *Journal) { j.Title = "  " }, "journal.title", "not blank"},
		{"title newline", base, func(j *Journal) { j.Title = "a\nb" }, "journal.title", "control character"},
		{"title escape", base, func(j *Journal) { j.Title = "a\x1b[31m" }, "journal.title", "control character"},
		{"title long", base, func(j *Journal) { j.Title = strings.Repeat("x", MaxLineBytes+1) }, "journal.title", "longer"},
		{"created zero", base, func(j *Journal) { j.CreatedAt = time.Time{} }, "journal.created_at", "required"},
		{"not UTC", base, func(j *Journal) { j.UpdatedAt = j.UpdatedAt.In(time.FixedZone("x", 3600)) }, "journal.updated_at", "UTC"},
		{"updated before created", base, func(j *Journal) { j.UpdatedAt = j.CreatedAt.Add(-1) }, "journal.updated_at", "before created_at"},
		{"revision 0", base, func(j *Journal) { j.Revision = 0 }, "journal.revision", "at least 1"},
		{"revision too low", base, func(j *Journal) { j.Revision = 5 }, "journal.revision", "too low"},
		{"non_goals null", base, func(j *Journal) { j.NonGoals = nil }, "journal.non_goals", "required"},
		{"blank non-goal", base, func(j *Journal) { j.NonGoals = []string{""} }, "journal.non_goals[0]", "not blank"},
		{"item id digits", base, func(j *Journal) { j.Checklist[1].ID = "7" }, "journal.checklist[1].id", "index"},
		{"item id dup", base, func(j *Journal) { j.Checklist[1].ID = "c0" }, "journal.checklist[1].id", "duplicates"},
		{"item evidence null", base, func(j *Journal) { j.Checklist[1].Evidence = nil }, "journal.checklist[1].evidence", "required"},
		{"unknown phase", base, func(j *Journal) { j.Phase = "ship" }, "journal.phase", "unknown phase"},
		{"unknown receipt key", base, func(j *Journal) { j.Receipts["ship"] = j.Receipts[PhaseFrame] }, "journal.receipts.ship", "unknown phase"},
		{"phase ahead of receipts", base, func(j *Journal) { j.Phase = PhaseReview }, "journal.phase", "verify has no receipt"},
		{"receipt ahead of phase", base, func(j *Journal) { j.Phase = PhaseBuild }, "journal.receipts.build", "did not advance"},
		{"receipt far ahead", base, func(j *Journal) { j.Receipts[PhaseReview] = j.Receipts[PhaseFrame] }, "journal.receipts.review", "ahead"},
		{"receipt without evidence", base, func(j *Journal) {
			r := j.Receipts[PhaseFrame]
			r.Evidence = []Evidence{}
			j.Receipts[PhaseFrame] = r
		}, "journal.receipts.frame.evidence", "at least one"},
		{"seals out of order", base, func(j *Journal) {
			r := j.Receipts[PhaseFrame]
			r.SealedAt = j.Receipts[PhaseExplore].SealedAt.Add(time.Nanosecond)
			r.Evidence = []Evidence{note("x")}
			r.Evidence[0].RecordedAt = r.SealedAt
			j.Receipts[PhaseFrame] = r
		}, "journal.receipts.explore.sealed_at", "before the seal"},
		{"seal after updated", base, func(j *Journal) {
			r := j.Receipts[PhaseBuild]
			r.SealedAt = at(j).Add(time.Second)
			j.Receipts[PhaseBuild] = r
		}, "journal.receipts.build.sealed_at", "after the journal's updated_at"},
		{"receipt evidence before seal", base, func(j *Journal) {
			j.Receipts[PhaseBuild].Evidence[0].RecordedAt = j.CreatedAt
		}, "journal.receipts.build.evidence[0].recorded_at", "before"},
		{"evidence out of order", base, func(j *Journal) {
			j.Checklist[0].Evidence = append(j.Checklist[0].Evidence, j.Checklist[0].Evidence[0])
			j.Checklist[0].Evidence[0].RecordedAt = at(j)
		}, "journal.checklist[0].evidence[1].recorded_at", "time order"},
		{"closure too early", base, func(j *Journal) {
			j.Closure = &Closure{ClosureBody: sampleClosure().ClosureBody, ClosedAt: at(j)}
			j.Revision += 10
		}, "journal.closure", "no receipt"},
		{"closure debt kind", closed, func(j *Journal) { j.Closure.Debt[0].Kind = "vibes" }, "journal.closure.debt[0].kind", "not a debt kind"},
		{"closure risks null", closed, func(j *Journal) { j.Closure.Risks = nil }, "journal.closure.risks", "required"},
		{"closure before deliver", closed, func(j *Journal) { j.Closure.ClosedAt = j.Receipts[PhaseDeliver].SealedAt.Add(-1) }, "journal.closure.closed_at", "before"},
		{"closure next goal id", closed, func(j *Journal) { j.Closure.Next[0].Goal = "a/b" }, "journal.closure.next[0].goal", "not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := tt.base.Clone()
			tt.mutate(j)
			err := j.Validate()
			if tt.path == "" {
				if err != nil {
					t.Fatalf("Validate = %v; want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil; want %s: %s", tt.path, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), tt.path+": ") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Validate = %q; want %s: …%s…", err, tt.path, tt.msg)
			}
			if exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit %d; want 2", exitcode.Of(err))
			}
		})
	}
}

func TestValidateEvidence(t *testing.T) {
	ok := sampleEvidence()
	for i, e := range ok {
		e.RecordedAt = t0
		if err := e.validate("e"); err != nil {
			t.Errorf("sample evidence %d (%s): %v", i, e.Type, err)
		}
	}
	tests := []struct {
		e    Evidence
		want string
	}{
		{Evidence{}, "e.type: required"},
		{Evidence{Type: "video"}, `e.type: unknown evidence type "video"`},
		{Evidence{Type: EvidenceCommand, ExitCode: intp(0)}, "e.argv: required"},
		{Evidence{Type: EvidenceCommand, Argv: []string{""}, ExitCode: intp(0)}, "e.argv[0]: empty program"},
		{Evidence{Type: EvidenceCommand, Argv: []string{"go"}}, "e.exit_code: required"},
		{Evidence{Type: EvidenceCommand, Argv: []string{"go"}, ExitCode: intp(256)}, "e.exit_code: 256 is not an exit code"},
		{Evidence{Type: EvidenceCommand, Argv: []string{"go"}, ExitCode: intp(0), Path: "x"}, "e.digest: required when path"},
		{Evidence{Type: EvidenceCommand, Argv: []string{"go"}, ExitCode: intp(0), Text: "x"}, "e.text: not allowed in command evidence"},
		{Evidence{Type: EvidenceFile, Path: "x"}, "e.digest: required"},
		{Evidence{Type: EvidenceFile, Path: "x", Digest: "md5:abc"}, "e.digest:"},
		{Evidence{Type: EvidenceFile, Path: "x", Digest: "sha256:" + strings.ToUpper(hex64('a'))}, "lowercase hex"},
		{Evidence{Type: EvidenceFile, Digest: "sha256:" + hex64('a')}, "e.path: required"},
		{Evidence{Type: EvidenceFile, Path: "a\nb", Digest: "sha256:" + hex64('a')}, "e.path: control character"},
		{Evidence{Type: EvidenceFile, Path: "x", Digest: "sha256:" + hex64('a'), ExitCode: intp(0)}, "e.exit_code: not allowed in file evidence"},
		{Evidence{Type: EvidenceTask, Task: "t/1", State: "queued"}, "e.task:"},
		{Evidence{Type: EvidenceTask, Task: "t1", State: "done"}, `e.state: "done" is not a task state`},
		{Evidence{Type: EvidenceTask, Task: "t1"}, "e.state:"},
		{Evidence{Type: EvidenceEvent, Event: "abc"}, "e.event:"},
		{Evidence{Type: EvidenceURL, URL: "example.com"}, "not absolute"},
		{Evidence{Type: EvidenceURL, URL: "https://"}, "no host"},
		{Evidence{Type: EvidenceURL, URL: "https://u:p@example.com/"}, "credentials"},
		{Evidence{Type: EvidenceURL, URL: "https://example.com/a b"}, "spaces"},
		{Evidence{Type: EvidenceNote}, "e.text: required"},
		{Evidence{Type: EvidenceNote, Text: "x", Note: "\x07"}, "e.note: control character"},
		{Evidence{Type: EvidenceNote, Text: "x", URL: "https://x.example"}, "e.url: not allowed in note evidence"},
	}
	for _, tt := range tests {
		err := tt.e.validate("e")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("validate(%+v) = %v; want %q", tt.e, err, tt.want)
		}
	}
}

func TestDecodeClosure(t *testing.T) {
	good := `{"apiVersion":"art/v1alpha1","kind":"GoalClosure","outcome":"o","cleanup":[],"debt":[],"risks":[],"next":[]}`
	if _, err := DecodeClosure([]byte(good)); err != nil {
		t.Fatalf("DecodeClosure(minimal) = %v", err)
	}
	for _, tt := range []struct{ doc, want string }{
		{strings.Replace(good, `"next":[]`, `"next":[],"closed_at":"2026-01-01T00:00:00Z"`, 1), "closure.closed_at: unknown field"},
		{strings.Replace(good, `,"debt":[]`, ``, 1), "closure.debt: required"},
		{strings.Replace(good, `"debt":[]`, `"debt":null`, 1), "closure.debt: required"},
		{strings.Replace(good, `"debt":[]`, `"debt":[{"kind":"x","text":"t"}]`, 1), "closure.debt[0].kind"},
		{strings.Replace(good, `"risks":[]`, `"risks":[{"severity":"low","text":"t","likelihood":1}]`, 1), "closure.risks[0].likelihood: unknown field"},
		{strings.Replace(good, `"outcome":"o"`, `"outcome":""`, 1), "closure.outcome: required"},
		{strings.Replace(good, `GoalClosure`, `Goal`, 1), "closure.kind"},
		{good + `{}`, "trailing data"},
	} {
		_, err := DecodeClosure([]byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("DecodeClosure(%s) = %v; want exit 2 %q", tt.doc, err, tt.want)
		}
	}
}
