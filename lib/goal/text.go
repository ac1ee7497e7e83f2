package goal

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/art-runtime/art/lib/words"
)

// WriteText writes the human view of a journal: identity, the phases with
// their receipts, the checklist with its evidence, the closure. It is for
// reading; scripts read the JSON.
func WriteText(w io.Writer, j *Journal) error {
	b := &strings.Builder{}
	state := "open"
	if j.Closed() {
		state = "closed"
	}
	fmt.Fprintf(b, "goal %s: %s\n", j.ID, oneLine(j.Title, 200))
	fmt.Fprintf(b, "  state %s, revision %d, phase %s (%d of %d sealed)\n", state, j.Revision, j.Phase, len(j.Receipts), len(Phases))
	fmt.Fprintf(b, "  created %s, updated %s\n", stamp(j.CreatedAt), stamp(j.UpdatedAt))
	if len(j.NonGoals) > 0 {
		b.WriteString("non-goals:\n")
		for _, s := range j.NonGoals {
			fmt.Fprintf(b, "  - %s\n", oneLine(s, 200))
		}
	}
	evidenced := 0
	for _, it := range j.Checklist {
		if len(it.Evidence) > 0 {
			evidenced++
		}
	}
	fmt.Fprintf(b, "checklist (%d of %d evidenced):\n", evidenced, len(j.Checklist))
	for i, it := range j.Checklist {
		mark := "[ ]"
		if len(it.Evidence) > 0 {
			mark = "[x]"
		}
		fmt.Fprintf(b, "  %s %d %s: %s\n", mark, i, it.ID, oneLine(it.Text, 200))
		writeEvidence(b, it.Evidence)
	}
	b.WriteString("phases:\n")
	for _, p := range Phases {
		r, ok := j.Receipts[p]
		switch {
		case ok:
			fmt.Fprintf(b, "  [x] %-8s sealed %s: %s\n", p, stamp(r.SealedAt), oneLine(r.Summary, 120))
			writeEvidence(b, r.Evidence)
		case p == j.Phase:
			fmt.Fprintf(b, "  [>] %-8s current\n", p)
		default:
			fmt.Fprintf(b, "  [ ] %s\n", p)
		}
	}
	if c := j.Closure; c != nil {
		fmt.Fprintf(b, "closure (closed %s):\n", stamp(c.ClosedAt))
		fmt.Fprintf(b, "  outcome: %s\n", oneLine(c.Outcome, 200))
		for _, s := range c.Cleanup {
			fmt.Fprintf(b, "  cleanup: %s\n", oneLine(s, 200))
		}
		for _, d := range c.Debt {
			fmt.Fprintf(b, "  debt (%s): %s\n", d.Kind, oneLine(d.Text, 200))
		}
		for _, r := range c.Risks {
			fmt.Fprintf(b, "  risk (%s): %s\n", r.Severity, oneLine(r.Text, 200))
		}
		for _, n := range c.Next {
			if n.Goal != "" {
				fmt.Fprintf(b, "  next: %s (goal %s)\n", oneLine(n.Title, 200), n.Goal)
			} else {
				fmt.Fprintf(b, "  next: %s\n", oneLine(n.Title, 200))
			}
		}
	} else if j.AllSealed() {
		b.WriteString("closure: none yet (every phase is sealed: close the goal)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeEvidence(b *strings.Builder, evs []Evidence) {
	for _, e := range evs {
		fmt.Fprintf(b, "        - %s\n", EvidenceLine(e))
	}
}

// EvidenceLine is one line describing a piece of evidence.
func EvidenceLine(e Evidence) string {
	var s string
	switch e.Type {
	case EvidenceCommand:
		code := -1
		if e.ExitCode != nil {
			code = *e.ExitCode
		}
		s = fmt.Sprintf("command (exit %d): %s", code, oneLine(words.Quote(e.Argv), 120))
		if e.Digest != "" {
			s += fmt.Sprintf(" [%s %s]", e.Path, shortDigest(e.Digest))
		}
	case EvidenceFile:
		s = fmt.Sprintf("file: %s %s", oneLine(e.Path, 120), shortDigest(e.Digest))
	case EvidenceTask:
		s = fmt.Sprintf("task: %s %s", e.Task, e.State)
		if q := e.FromQueue; q != nil {
			s += fmt.Sprintf(" [queue %s seq %d, %d attempt%s]", filepath.Base(q.Dir), q.Seq, q.Attempts, plural(q.Attempts))
		}
	case EvidenceEvent:
		s = fmt.Sprintf("event: %s", e.Event)
		if k := e.FromSink; k != nil {
			s = fmt.Sprintf("event: %s %s seq %d [%s line %d %s]", oneLine(k.Subject, 80), oneLine(k.Type, 80), k.Seq, filepath.Base(k.Path), k.Line, shortDigest(e.Event))
		}
	case EvidenceURL:
		s = fmt.Sprintf("url: %s", oneLine(e.URL, 160))
	case EvidenceNote:
		s = fmt.Sprintf("note: %s", oneLine(e.Text, 160))
	default:
		s = string(e.Type)
	}
	if e.Note != "" {
		s += " (" + oneLine(e.Note, 80) + ")"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func shortDigest(d string) string {
	if len(d) > len(digestPrefix)+12 {
		return d[:len(digestPrefix)+12] + "…"
	}
	return d
}

// oneLine folds whitespace runs (newlines included) to single spaces and
// clips to max bytes without splitting a UTF-8 sequence.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// WriteList writes one line per journal: id, phase, seals, checklist,
// revision, state and title.
func WriteList(w io.Writer, js []*Journal) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPHASE\tSEALED\tCHECKLIST\tREV\tSTATE\tTITLE")
	for _, j := range js {
		evidenced := 0
		for _, it := range j.Checklist {
			if len(it.Evidence) > 0 {
				evidenced++
			}
		}
		state := "open"
		if j.Closed() {
			state = "closed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%d\t%s\t%s\n", j.ID, j.Phase, len(j.Receipts), len(Phases),
			evidenced, len(j.Checklist), j.Revision, state, oneLine(j.Title, 80))
	}
	return tw.Flush()
}
