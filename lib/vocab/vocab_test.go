package vocab

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"fix-add_2", true}, {"0a", true}, {strings.Repeat("x", MaxIDLen), true},
		{"", false}, {"-a", false}, {"_a", false}, {"a.b", false}, {"a/b", false}, {"a*", false},
		{strings.Repeat("x", MaxIDLen+1), false}, {"é", false},
	} {
		err := ValidName("task", c.name)
		if (err == nil) != c.ok {
			t.Errorf("ValidName(%q) = %v; want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "task") {
			t.Errorf("ValidName(%q) = %q; want the field named first", c.name, err)
		}
	}
}

func TestTerminal(t *testing.T) {
	want := map[TaskState]bool{StateQueued: false, StateRunning: false, StateSucceeded: true, StateFailed: true, StateCancelled: true}
	if len(States) != len(want) {
		t.Fatalf("States has %d states; want %d", len(States), len(want))
	}
	for _, s := range States {
		if s.Terminal() != want[s] {
			t.Errorf("%s.Terminal() = %v; want %v", s, s.Terminal(), want[s])
		}
	}
}
