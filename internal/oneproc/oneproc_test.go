package oneproc

import (
	"runtime"
	"testing"
)

func TestOneP(t *testing.T) {
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS = %d after the import; want 1", n)
	}
}
