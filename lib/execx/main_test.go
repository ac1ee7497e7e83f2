package execx

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if IsShim() {
		os.Exit(RunShim())
	}
	goleak.VerifyTestMain(m)
}
