package workspace

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/fsx"
)

// testHookBeforeRename lets a test change the target between the read and
// the rename, the window ErrChanged guards.
var testHookBeforeRename func()

// Edit describes an applied replacement.
type Edit struct {
	Path        string `json:"path"`
	Line        int    `json:"line"`   // 1-based line where the old text started
	Offset      int64  `json:"offset"` // byte offset where the old text started
	BytesBefore int64  `json:"bytes_before"`
	BytesAfter  int64  `json:"bytes_after"`
}

// Read returns the contents of the existing regular file rel beneath the
// root. The size check uses the opened descriptor's own metadata, so the file
// checked is the file read; a file that grows past the cap while being read
// is refused too.
func (e *Editor) Read(rel string) ([]byte, error) {
	f, err := fsx.OpenBeneath(e.root, rel, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, e.openErr("read", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{Op: "read", Path: rel, Err: err}
	}
	if err := e.checkFile("read", rel, fi); err != nil {
		return nil, err
	}
	return e.readAll("read", rel, f, fi.Size())
}

// Replace replaces the single occurrence of old with new in the existing
// regular file rel. See the package comment for what it refuses.
func (e *Editor) Replace(rel, old, new string) (*Edit, error) {
	if old == "" {
		return nil, &Error{Op: "edit", Path: rel, Err: ErrEmptyOld}
	}
	if err := fsx.CheckRel(rel); err != nil {
		return nil, &Error{Op: "edit", Path: rel, Err: err}
	}
	clean := filepath.Clean(rel)
	dir, base := filepath.Dir(clean), filepath.Base(clean)
	if clean == "." || base == "." || base == ".." {
		return nil, &Error{Op: "edit", Path: rel, Err: ErrNotRegular, Detail: "the workspace root is a directory"}
	}
	// The parent directory is opened beneath the root and every later step
	// (open of the target, temp file, rename, fsync) is relative to it: a
	// symlink swapped into a parent component after this point cannot
	// redirect the write.
	pdir, err := fsx.OpenBeneath(e.root, dir, os.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, e.openErr("edit", rel, err)
	}
	defer pdir.Close()
	pfd := int(pdir.Fd())

	tfd, err := openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, e.targetErr(rel, err)
	}
	target := os.NewFile(uintptr(tfd), filepath.Join(e.root, clean))
	defer target.Close()
	before, err := target.Stat()
	if err != nil {
		return nil, &Error{Op: "edit", Path: rel, Err: err}
	}
	if err := e.checkFile("edit", rel, before); err != nil {
		return nil, err
	}
	data, err := e.readAll("edit", rel, target, before.Size())
	if err != nil {
		return nil, err
	}

	at, err := uniqueIndex(data, []byte(old))
	if err != nil {
		return nil, &Error{Op: "edit", Path: rel, Err: err, Detail: matchDetail(data, []byte(old), err)}
	}
	out := make([]byte, 0, len(data)-len(old)+len(new))
	out = append(out, data[:at]...)
	out = append(out, new...)
	out = append(out, data[at+len(old):]...)
	if int64(len(out)) > e.maxFile {
		return nil, &Error{Op: "edit", Path: rel, Err: ErrTooLarge,
			Detail: fmt.Sprintf("the result would be %d bytes, limit %d", len(out), e.maxFile)}
	}

	if err := e.replaceAt(pfd, base, rel, target, before, out); err != nil {
		return nil, err
	}
	return &Edit{
		Path:        rel,
		Line:        bytes.Count(data[:at], []byte{'\n'}) + 1,
		Offset:      int64(at),
		BytesBefore: int64(len(data)),
		BytesAfter:  int64(len(out)),
	}, nil
}

// replaceAt writes out to a temp file in the directory pfd, gives it the
// target's mode and owner, fsyncs it, re-checks that base still names the
// file that was read (same device and inode, same size and mtime), renames it
// over base and fsyncs the directory. The temp file never outlives a failure.
func (e *Editor) replaceAt(pfd int, base, rel string, target *os.File, before os.FileInfo, out []byte) (err error) {
	fail := func(err error) error { return &Error{Op: "edit", Path: rel, Err: err} }
	tmp, err := tempName(base)
	if err != nil {
		return fail(err)
	}
	fd, err := openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fail(fmt.Errorf("create temporary file: %w", err))
	}
	f := os.NewFile(uintptr(fd), tmp)
	renamed := false
	defer func() {
		f.Close()
		if !renamed {
			_ = unix.Unlinkat(pfd, tmp, 0)
		}
	}()
	if _, err := f.Write(out); err != nil {
		return fail(fmt.Errorf("write temporary file: %w", err))
	}
	if err := f.Chmod(before.Mode().Perm() | before.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)); err != nil {
		return fail(fmt.Errorf("keep file mode: %w", err))
	}
	if uid, gid, ok := owner(before); ok {
		// Only a privileged process may give a file away; for everyone else
		// the file was already theirs or the chown is not ours to make.
		if err := f.Chown(uid, gid); err != nil && !errors.Is(err, unix.EPERM) {
			return fail(fmt.Errorf("keep file owner: %w", err))
		}
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("sync temporary file: %w", err))
	}
	// The same file, unchanged, must still be at base: otherwise someone
	// swapped or wrote it while we were editing, and the rename would
	// overwrite their change or a different file.
	if testHookBeforeRename != nil {
		testHookBeforeRename()
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrChanged, err))
	}
	now, err := target.Stat()
	if err != nil {
		return fail(err)
	}
	if !sameInode(before, &st) || now.Size() != before.Size() || !now.ModTime().Equal(before.ModTime()) {
		return fail(ErrChanged)
	}
	if err := renameat(pfd, tmp, pfd, base); err != nil {
		return fail(fmt.Errorf("rename over the target: %w", err))
	}
	renamed = true
	if err := fsyncFD(pfd); err != nil {
		return fail(fmt.Errorf("sync directory: %w", err))
	}
	return nil
}

func (e *Editor) checkFile(op, rel string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &Error{Op: op, Path: rel, Err: ErrNotRegular, Detail: "it is " + describeMode(fi.Mode())}
	}
	if fi.Size() > e.maxFile {
		return &Error{Op: op, Path: rel, Err: ErrTooLarge, Detail: fmt.Sprintf("%d bytes, limit %d", fi.Size(), e.maxFile)}
	}
	return nil
}

// readAll reads at most the cap plus one byte, so a file that grew after its
// size was checked is refused rather than read without bound.
func (e *Editor) readAll(op, rel string, f *os.File, size int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	n, err := io.Copy(buf, io.LimitReader(f, e.maxFile+1))
	if err != nil {
		return nil, &Error{Op: op, Path: rel, Err: err}
	}
	if n > e.maxFile {
		return nil, &Error{Op: op, Path: rel, Err: ErrTooLarge, Detail: fmt.Sprintf("it grew past the limit of %d bytes while being read", e.maxFile)}
	}
	return buf.Bytes(), nil
}

func (e *Editor) openErr(op, rel string, err error) error {
	switch {
	case errors.Is(err, fsx.ErrEscape):
		return &Error{Op: op, Path: rel, Err: err}
	case errors.Is(err, os.ErrNotExist):
		d := ""
		if op == "edit" {
			d = "creating files is not allowed"
		}
		return &Error{Op: op, Path: rel, Err: ErrNotExist, Detail: d}
	case errors.Is(err, unix.ENOTDIR):
		return &Error{Op: op, Path: rel, Err: ErrNotExist, Detail: "a parent is not a directory"}
	}
	return &Error{Op: op, Path: rel, Err: err}
}

// targetErr classifies a failed O_NOFOLLOW open of an edit's target: a
// symlink is either an escape (said as such) or a link inside the root,
// refused with the path of the file it points to.
func (e *Editor) targetErr(rel string, err error) error {
	if !errors.Is(err, unix.ELOOP) {
		return e.openErr("edit", rel, err)
	}
	real, rerr := fsx.ResolveBeneath(e.root, rel)
	if rerr != nil {
		return e.openErr("edit", rel, rerr)
	}
	d := ""
	if r, err := filepath.Rel(e.root, real); err == nil {
		d = "it points to " + quote(r)
	}
	return &Error{Op: "edit", Path: rel, Err: ErrSymlink, Detail: d}
}

// uniqueIndex finds old in data and proves there is no second occurrence,
// overlapping ones included ("aa" in "aaa" is ambiguous).
func uniqueIndex(data, old []byte) (int, error) {
	at := bytes.Index(data, old)
	if at < 0 {
		return 0, ErrNoMatch
	}
	if bytes.Contains(data[at+1:], old) {
		return 0, ErrAmbiguous
	}
	return at, nil
}

// matchDetail tells the model how to fix its request: where the
// occurrences are, or that whitespace may differ.
func matchDetail(data, old []byte, err error) string {
	switch {
	case errors.Is(err, ErrAmbiguous):
		var lines []string
		for from := 0; from < len(data); {
			i := bytes.Index(data[from:], old)
			if i < 0 {
				break
			}
			l := strconv.Itoa(bytes.Count(data[:from+i], []byte{'\n'}) + 1)
			if len(lines) == 0 || lines[len(lines)-1] != l {
				if len(lines) == 5 {
					lines = append(lines, "…")
					break
				}
				lines = append(lines, l)
			}
			from += i + 1
		}
		word := "line"
		if len(lines) > 1 {
			word = "lines"
		}
		return fmt.Sprintf("%d occurrences, on %s %s; include more surrounding text so it matches once",
			countOverlapping(data, old), word, strings.Join(lines, ", "))
	case errors.Is(err, ErrNoMatch):
		if bytes.Contains(bytes.Join(bytes.Fields(data), nil), bytes.Join(bytes.Fields(old), nil)) {
			return "it would match if whitespace were ignored: copy the text exactly, including indentation"
		}
		return "read the file and copy the text exactly"
	}
	return ""
}

func countOverlapping(data, old []byte) int {
	n := 0
	for from := 0; ; {
		i := bytes.Index(data[from:], old)
		if i < 0 {
			return n
		}
		n++
		from += i + 1
	}
}

func tempName(base string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := "." + base
	if len(name) > 200 {
		name = name[:200]
	}
	return name + ".art-" + hex.EncodeToString(b[:]) + ".tmp", nil
}

func describeMode(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	for {
		err := unix.Renameat(olddirfd, oldpath, newdirfd, newpath)
		if err != unix.EINTR {
			return err
		}
	}
}

func fsyncFD(fd int) error {
	for {
		err := unix.Fsync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}
