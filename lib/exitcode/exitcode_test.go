package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	errStale := Sentinel(Conflict, "stale revision")
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain error is the tool's failure", errors.New("disk"), Internal},
		{"wrapped code", Wrap(Usage, errors.New("bad")), Usage},
		{"sentinel through fmt wrap", fmt.Errorf("goal g1: %w", errStale), Conflict},
		{"outermost code wins", Wrap(NotFound, Wrap(Usage, errors.New("x"))), NotFound},
		{"errorf", Errorf(Refused, "program %q: not allowed", "rm"), Refused},
	}
	for _, tt := range tests {
		if got := Of(tt.err); got != tt.want {
			t.Errorf("%s: Of(%v) = %d; want %d", tt.name, tt.err, got, tt.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", errStale), errStale) {
		t.Errorf("errors.Is through wrap = false; want true")
	}
	if Wrap(Usage, nil) != nil {
		t.Errorf("Wrap(code, nil) != nil")
	}
}
