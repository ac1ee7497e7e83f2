package queue

import (
	"context"

	"github.com/art-runtime/art/lib/jsonx"
)

// CheckReport is what `artq fsck` prints: the backend's findings about the
// stored log, and whether every event is a legal transition.
type CheckReport struct {
	jsonx.TypeMeta
	OK bool `json:"ok"`
	LogCheck
	Tasks int    `json:"tasks"`
	Error string `json:"error,omitempty"`
}

// Fsck checks the log and its replay without writing anything: every
// record's checksum and sequence (the backend), then every event through the
// reducer. A torn tail is reported but is not corruption (the next writer
// cuts it); anything else wrong is returned as the error (a *CorruptError,
// exit 125) along with the report.
func Fsck(ctx context.Context, b Backend) (*CheckReport, error) { return FsckWith(ctx, b, nil) }

// FsckWith is Fsck that also checks what is derived from the log (a state
// index): check gets the replayed state and returns a note for the report,
// or the error that makes the check fail.
func FsckWith(ctx context.Context, b Backend, check func(*State) (string, error)) (*CheckReport, error) {
	rep := &CheckReport{TypeMeta: jsonx.Meta(KindCheck)}
	lc, err := b.Check(ctx)
	if lc != nil {
		rep.LogCheck = *lc
	}
	if err == nil {
		var q *Queue
		if q, err = Inspect(ctx, b); err == nil {
			q.viewLocal(func(st *State) {
				rep.Tasks = st.Len()
				if check != nil {
					var note string
					if note, err = check(st); note != "" {
						rep.Notes = append(rep.Notes, note)
					}
				}
			})
		}
	}
	if err != nil {
		rep.Error = err.Error()
		return rep, err
	}
	rep.OK = true
	return rep, nil
}
