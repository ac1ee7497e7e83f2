package queueobs

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/execx"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	goleak.VerifyTestMain(m)
}
