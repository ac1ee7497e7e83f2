package stateindex

import (
	"testing"

	"go.uber.org/goleak"
)

// The worker's keeper starts a goroutine: none may outlive its stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
