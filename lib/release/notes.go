package release

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// noteCommits reads the commits reachable from commit and not from
// previous, and orders them newest first without asking git for an order:
// a topological order (a commit before its parents) with ties broken by
// committer time, newest first, then by id. It is a function of the
// objects alone, so no git version's rev-list ordering can change the
// notes. Merge commits order the graph but are not listed.
func noteCommits(ctx context.Context, r *Repo, commit, previous string) ([]NoteCommit, error) {
	ids, err := r.RevList(ctx, commit, previous)
	if err != nil {
		return nil, err
	}
	commits := make([]*Commit, len(ids))
	err = r.Stream(ids, func(i int, typ string, size int64, rd io.Reader) error {
		b, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		commits[i], err = parseCommit(ids[i], b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return orderCommits(commits), nil
}

// orderCommits is Kahn's algorithm from the tips down: a commit is ready
// once every child of it in the set has been emitted.
func orderCommits(commits []*Commit) []NoteCommit {
	byID := make(map[string]*Commit, len(commits))
	for _, c := range commits {
		byID[c.ID] = c
	}
	children := make(map[string]int, len(commits))
	for _, c := range commits {
		for _, p := range c.Parents {
			if _, ok := byID[p]; ok {
				children[p]++
			}
		}
	}
	ready := &commitHeap{}
	for _, c := range commits {
		if children[c.ID] == 0 {
			heap.Push(ready, c)
		}
	}
	out := make([]NoteCommit, 0, len(commits))
	for ready.Len() > 0 {
		c := heap.Pop(ready).(*Commit)
		if len(c.Parents) <= 1 {
			out = append(out, NoteCommit{ID: c.ID, Message: c.Message})
		}
		for _, p := range c.Parents {
			if _, ok := byID[p]; !ok {
				continue
			}
			if children[p]--; children[p] == 0 {
				heap.Push(ready, byID[p])
			}
		}
	}
	return out
}

// commitHeap pops the newest commit (committer time), then the lowest id.
type commitHeap []*Commit

func (h commitHeap) Len() int { return len(h) }
func (h commitHeap) Less(i, j int) bool {
	if h[i].CommitterTime != h[j].CommitterTime {
		return h[i].CommitterTime > h[j].CommitterTime
	}
	return h[i].ID < h[j].ID
}
func (h commitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *commitHeap) Push(x any)   { *h = append(*h, x.(*Commit)) }
func (h *commitHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// NoteCommit is one commit as the notes see it.
type NoteCommit struct {
	ID      string
	Message string
}

// Change is a commit message read as a conventional commit
// (conventionalcommits.org v1.0.0) where it is one.
type Change struct {
	Type     string // lower-cased type; "" when the subject is not conventional
	Scope    string
	Breaking bool
	Summary  string // the description, or the whole subject when not conventional
}

var conventionalRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*)(?:\(([^()]*)\))?(!)?: +(\S.*)$`)

// ParseChange reads a commit message. The subject is the first paragraph
// joined into one line, as `git log --format=%s` shows it; a
// "BREAKING CHANGE:" or "BREAKING-CHANGE:" footer marks a breaking change
// like a "!" after the type does.
func ParseChange(message string) Change {
	message = strings.ReplaceAll(message, "\r\n", "\n")
	message = strings.TrimLeft(message, "\n")
	para, rest, _ := strings.Cut(message, "\n\n")
	subject := strings.Join(strings.Fields(para), " ")
	ch := Change{Summary: subject}
	if m := conventionalRE.FindStringSubmatch(subject); m != nil {
		ch = Change{Type: strings.ToLower(m[1]), Scope: strings.TrimSpace(m[2]), Breaking: m[3] == "!", Summary: m[4]}
	}
	if ch.Type != "" {
		for _, line := range strings.Split(rest, "\n") {
			if strings.HasPrefix(line, "BREAKING CHANGE:") || strings.HasPrefix(line, "BREAKING-CHANGE:") {
				ch.Breaking = true
			}
		}
	}
	return ch
}

// noteSections is the order of NOTES.md sections and the types each holds.
var noteSections = []struct {
	title string
	types []string
}{
	{"Features", []string{"feat", "feature"}},
	{"Bug fixes", []string{"fix"}},
	{"Performance", []string{"perf"}},
	{"Security", []string{"security"}},
	{"Reverts", []string{"revert"}},
	{"Documentation", []string{"docs", "doc"}},
	{"Refactoring", []string{"refactor"}},
	{"Tests", []string{"test", "tests"}},
	{"Build", []string{"build", "deps"}},
	{"CI", []string{"ci"}},
	{"Style", []string{"style"}},
	{"Chores", []string{"chore"}},
}

// notesInput is everything NOTES.md is a function of.
type notesInput struct {
	Contract *Contract
	ID       *Identity
	Commits  []NoteCommit // newest first (orderCommits)
}

// buildNotes writes the canonical release notes: a header naming the exact
// commit, the changes since the previous release tag grouped by
// conventional-commit type (breaking changes first, non-conventional
// subjects last under "Other changes"), each line ending in the commit's
// 12-digit id. The same history always gives the same bytes.
func buildNotes(in notesInput) []byte {
	c, id := in.Contract, in.ID
	var b strings.Builder
	fmt.Fprintf(&b, "# %s %s\n\n", c.Name, id.Version)
	fmt.Fprintf(&b, "Built from commit `%s`", id.Commit.ID)
	if id.Tag != "" {
		fmt.Fprintf(&b, " (tag `%s`)", id.Tag)
	}
	fmt.Fprintf(&b, ", committed %s.\n\n", id.Time().Format("2006-01-02 15:04:05 UTC"))
	n := len(in.Commits)
	changes := plural(n, "change", "changes")
	switch {
	case id.PreviousLine && id.NotesFrom != "":
		fmt.Fprintf(&b, "%d %s since `%s`, the merge base with %s: the previous release, %s, is not in this commit's history.\n",
			n, changes, id.NotesFrom[:12], mdEscape(id.Previous), mdEscape(id.Previous))
	case id.PreviousLine:
		fmt.Fprintf(&b, "%d %s: the previous release, %s, shares no history with this commit.\n", n, changes, mdEscape(id.Previous))
	case id.Previous != "" && n == 0:
		fmt.Fprintf(&b, "No changes since %s.\n", mdEscape(id.Previous))
	case id.Previous != "" && n > distantNotes:
		fmt.Fprintf(&b, "%d %s since %s, the closest earlier release tag in this commit's history (more than %d: an earlier release may have been tagged on another branch).\n",
			n, changes, mdEscape(id.Previous), distantNotes)
	case id.Previous != "":
		fmt.Fprintf(&b, "%d %s since %s.\n", n, changes, mdEscape(id.Previous))
	default:
		fmt.Fprintf(&b, "%d %s: the first release, no earlier release tag.\n", n, changes)
	}
	if c.Notes.Changelog != "" {
		fmt.Fprintf(&b, "Changes to documents and the command line are listed in [%s](%s).\n", c.Notes.Changelog, c.Notes.Changelog)
	}
	if n == 0 {
		return []byte(b.String())
	}
	line := func(nc NoteCommit, ch Change) string {
		s := "- "
		if ch.Scope != "" {
			s += "**" + mdEscape(ch.Scope) + ":** "
		}
		summary := mdEscape(ch.Summary)
		if strings.TrimSpace(ch.Summary) == "" {
			summary = "(no subject)"
		}
		return s + summary + " (" + nc.ID[:12] + ")\n"
	}
	if c.Notes.Group == GroupNone {
		b.WriteString("\n## Changes\n\n")
		for _, nc := range in.Commits {
			ch := ParseChange(nc.Message)
			if ch.Type != "" {
				ch.Summary = ch.Type + ": " + ch.Summary
			}
			b.WriteString(line(nc, ch))
		}
		return []byte(b.String())
	}
	sections := map[string][]string{}
	section := func(ch Change) string {
		if ch.Breaking {
			return "Breaking changes"
		}
		for _, s := range noteSections {
			for _, t := range s.types {
				if ch.Type == t {
					return s.title
				}
			}
		}
		return "Other changes"
	}
	for _, nc := range in.Commits {
		ch := ParseChange(nc.Message)
		if ch.Type != "" && section(ch) == "Other changes" {
			ch.Summary = ch.Type + ": " + ch.Summary
		}
		title := section(ch)
		sections[title] = append(sections[title], line(nc, ch))
	}
	order := []string{"Breaking changes"}
	for _, s := range noteSections {
		order = append(order, s.title)
	}
	order = append(order, "Other changes")
	for _, title := range order {
		lines := sections[title]
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		for _, l := range lines {
			b.WriteString(l)
		}
	}
	return []byte(b.String())
}

// distantNotes is how many changes make the notes say that the previous
// release tag in the commit's history may not be the previous release.
const distantNotes = 1000

// mdEscape makes commit text literal in Markdown: a backslash before every
// character CommonMark could read as markup — emphasis (*, _), code (`),
// links and images ([, ], !), raw HTML and autolinks (<, >), entities (&),
// tables and strikethrough (|, ~) and the escape itself — so a subject like
// "<script>" or "_git" shows as written. Control characters become spaces.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune("\\`*_[]<>!&|~#", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
