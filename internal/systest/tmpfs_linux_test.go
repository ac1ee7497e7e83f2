package systest

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestTmpfs(t *testing.T) {
	m := MountTmpfs(t, 64<<10)
	if err := os.WriteFile(m.Path("state"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := m.Fill(); n < 32<<10 || n > 64<<10 {
		t.Errorf("Fill took %d bytes of a 64 KiB tmpfs", n)
	}
	if err := os.WriteFile(m.Path("new"), make([]byte, 4096), 0o600); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("write on a full tmpfs = %v; want ENOSPC", err)
	}
	os.Remove(m.Path("new"))
	m.Free()
	if err := os.WriteFile(m.Path("new"), make([]byte, 4096), 0o600); err != nil {
		t.Errorf("write after Free = %v", err)
	}
	m.ReadOnly()
	if err := os.WriteFile(m.Path("state"), []byte("changed"), 0o600); !errors.Is(err, unix.EROFS) {
		t.Errorf("write as root on a read-only tmpfs = %v; want EROFS", err)
	}
	m.ReadWrite()
	if b, _ := os.ReadFile(m.Path("state")); string(b) != "kept" {
		t.Errorf("state = %q after the remounts; want kept", b)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.Dir, &st); err != nil || st.Blocks*uint64(st.Bsize) != 64<<10 {
		t.Errorf("after the remounts the tmpfs has %d blocks of %d (%v); want 64 KiB kept", st.Blocks, st.Bsize, err)
	}
}
