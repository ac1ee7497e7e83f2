package release

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

func TestOutputErrorNamesTheOutputDirectory(t *testing.T) {
	tmp := "/r/.dist.tmp-123"
	enospc := &fs.PathError{Op: "write", Path: tmp + "/demo.tar.gz", Err: syscall.ENOSPC}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("archive: %w", enospc), "output directory dist: archive: write /r/.dist.tmp-123/demo.tar.gz: no space left on device"},
		// not about a file of the release: as it was
		{fmt.Errorf("ref nope: %w", ErrNotFound), "ref nope: " + ErrNotFound.Error()},
		{&fs.PathError{Op: "open", Path: "/r/.dist.tmp-1234/x", Err: syscall.ENOSPC}, "open /r/.dist.tmp-1234/x: no space left on device"},
		{&fs.PathError{Op: "open", Path: "/repo/.git/HEAD", Err: syscall.EIO}, "open /repo/.git/HEAD: input/output error"},
	} {
		got := outputError("dist", tmp, tt.err)
		if got.Error() != tt.want {
			t.Errorf("outputError(%v) = %q; want %q", tt.err, got, tt.want)
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("outputError(%v) lost its cause", tt.err)
		}
	}
}
