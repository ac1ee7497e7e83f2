package systest

import (
	"os"
	"testing"
)

// SwapSymlink is the attacker of a confinement race: until the returned
// stop is called it keeps replacing the symlink at link, atomically
// (symlink beside it, then rename over it), pointing it alternately at
// inside and at outside, so that an open racing it meets both. stop waits
// until the swapping has ended.
func SwapSymlink(t testing.TB, link, inside, outside string) (stop func()) {
	t.Helper()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tmp := link + ".tmp"
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			target := inside
			if i%2 == 1 {
				target = outside
			}
			os.Remove(tmp)
			if err := os.Symlink(target, tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, link); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
