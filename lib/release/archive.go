package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

// GzipLevel is the compression level of the archive: gzip(1)'s and zlib's
// default, so the archive is about the size `git archive --format=tar.gz`
// makes. Changing it changes every archive's bytes.
const GzipLevel = 6

// Archive modes. Git records only "executable or not" for files; the archive
// writes the conventional modes for each, whatever the umask of the machine.
const (
	archiveFileMode    = 0o644
	archiveExecMode    = 0o755
	archiveDirMode     = 0o755
	archiveSymlinkMode = 0o777
)

// ArchiveResult describes a written archive.
type ArchiveResult struct {
	TarSHA256 string
	TarSize   int64
	Entries   int
	// Omitted lists gitlink (submodule) paths left out under the "omit"
	// policy.
	Omitted []string
}

// archiveEntry is one tar member to write, in final order.
type archiveEntry struct {
	name  string // full tar name, with the top directory and "/" for directories
	entry TreeEntry
}

// planArchive turns a tree listing into the sorted members of the archive:
// the top directory first, then every path bytewise-sorted by its tar name
// (directories with their trailing slash, so each directory precedes its
// contents). Gitlinks are refused or omitted by policy.
func planArchive(prefix string, tree []TreeEntry, submodules string) ([]archiveEntry, []string, error) {
	plan := make([]archiveEntry, 0, len(tree)+1)
	plan = append(plan, archiveEntry{name: prefix + "/", entry: TreeEntry{Mode: modeTree, Type: typeTree}})
	var omitted []string
	for _, e := range tree {
		switch {
		case e.Mode == modeGitlink || e.Type == typeCommit:
			if submodules != SubmodulesOmit {
				return nil, nil, exitcode.WithHint(fmt.Errorf("path %s: %w: it is a submodule (gitlink to %s)", e.Path, ErrSubmodule, e.OID),
					`set "submodules": "omit" in the contract to release without submodule contents`)
			}
			omitted = append(omitted, e.Path)
		case e.Mode == modeTree && e.Type == typeTree:
			plan = append(plan, archiveEntry{name: prefix + "/" + e.Path + "/", entry: e})
		case e.Mode == modeSymlink && e.Type == typeBlob, e.Mode&modeTypeMsk == modeRegular && e.Type == typeBlob:
			plan = append(plan, archiveEntry{name: prefix + "/" + e.Path, entry: e})
		default:
			return nil, nil, fmt.Errorf("path %s: unsupported Git mode %06o (%s)", e.Path, e.Mode, e.Type)
		}
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].name < plan[j].name })
	sort.Strings(omitted)
	return dropEmptyDirs(plan), omitted, nil
}

// dropEmptyDirs leaves out directories with no file or symlink below them
// (an empty tree, or one holding only omitted submodules), as git archive
// does: it writes a directory only on the way to a file. plan is sorted, so
// a directory's contents follow it directly; walking backwards, a directory
// is kept when the next kept entry lies inside it. The top directory (plan[0])
// is always kept.
func dropEmptyDirs(plan []archiveEntry) []archiveEntry {
	keep := make([]bool, len(plan))
	nextKept := ""
	for i := len(plan) - 1; i >= 1; i-- {
		e := plan[i]
		if e.entry.Type != typeTree || strings.HasPrefix(nextKept, e.name) {
			keep[i] = true
			nextKept = e.name
		}
	}
	out := plan[:1]
	for i := 1; i < len(plan); i++ {
		if keep[i] {
			out = append(out, plan[i])
		}
	}
	return out
}

// writeArchive writes the gzip-compressed tar of plan to w, reading blob
// contents from the repository in plan order. Every header is a function of
// the tree and the commit time only: uid/gid 0, no owner names, no access or
// change times, modes from plan, Go's archive/tar choosing USTAR whenever an
// entry fits and PAX records otherwise (long names, large files) — a choice
// made from the header alone. The gzip header carries no name and no time.
func writeArchive(w io.Writer, r *Repo, plan []archiveEntry, mtime time.Time) (ArchiveResult, error) {
	var res ArchiveResult
	gz, err := gzip.NewWriterLevel(w, GzipLevel)
	if err != nil {
		return res, err
	}
	// gz.Header is left zero: no name, no comment, MTIME 0, OS 255 (unknown).
	// Compression, the dearest step, runs on its own goroutine, so reading
	// objects and hashing the tar overlap with it.
	zw := newAsyncWriter(gz)
	defer zw.abort()
	tarHash := sha256.New()
	count := &countWriter{}
	// The buffer batches tar's 512-byte header writes before they reach the
	// hash and the compressor.
	buf := bufio.NewWriterSize(io.MultiWriter(zw, tarHash, count), 1<<16)
	tw := tar.NewWriter(buf)

	hdr := func(e archiveEntry, size int64) *tar.Header {
		h := &tar.Header{
			Name:    e.name,
			ModTime: mtime,
			Uid:     0, Gid: 0,
			Uname: "", Gname: "",
		}
		binaryNames(h)
		switch {
		case e.entry.Mode == modeTree:
			h.Typeflag, h.Mode = tar.TypeDir, archiveDirMode
		case e.entry.Mode == modeSymlink:
			h.Typeflag, h.Mode = tar.TypeSymlink, archiveSymlinkMode
		default:
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, archiveFileMode, size
			if e.entry.Mode&0o100 != 0 {
				h.Mode = archiveExecMode
			}
		}
		return h
	}

	// Blobs are streamed from cat-file in plan order; directories are written
	// as they come up between them.
	var blobs []string
	var blobAt []int
	for i, e := range plan {
		if e.entry.Type == typeBlob {
			blobs = append(blobs, e.entry.OID)
			blobAt = append(blobAt, i)
		}
	}
	next := 0 // next plan index to write
	writeDirsUpTo := func(limit int) error {
		for ; next < limit; next++ {
			if err := tw.WriteHeader(hdr(plan[next], 0)); err != nil {
				return fmt.Errorf("archive %s: %w", plan[next].name, err)
			}
			res.Entries++
		}
		return nil
	}
	err = r.Stream(blobs, func(i int, typ string, size int64, rd io.Reader) error {
		e := plan[blobAt[i]]
		if typ != typeBlob {
			return fmt.Errorf("path %s: object %s is a %s, not a blob", e.entry.Path, e.entry.OID, typ)
		}
		if err := writeDirsUpTo(blobAt[i]); err != nil {
			return err
		}
		if e.entry.Mode == modeSymlink {
			target, err := io.ReadAll(rd)
			if err != nil {
				return err
			}
			h := hdr(e, 0)
			h.Linkname = string(target)
			if err := checkLinkname(e.entry.Path, h.Linkname); err != nil {
				return err
			}
			binaryNames(h)
			if err := tw.WriteHeader(h); err != nil {
				return fmt.Errorf("archive %s: %w", e.name, err)
			}
		} else {
			if err := tw.WriteHeader(hdr(e, size)); err != nil {
				return fmt.Errorf("archive %s: %w", e.name, err)
			}
			if _, err := io.Copy(tw, rd); err != nil {
				return fmt.Errorf("archive %s: %w", e.name, err)
			}
		}
		next++
		res.Entries++
		return nil
	})
	if err != nil {
		return res, err
	}
	if err := writeDirsUpTo(len(plan)); err != nil {
		return res, err
	}
	if err := tw.Close(); err != nil {
		return res, fmt.Errorf("archive: %w", err)
	}
	if err := buf.Flush(); err != nil {
		return res, fmt.Errorf("archive: %w", err)
	}
	if err := zw.close(); err != nil {
		return res, fmt.Errorf("archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return res, fmt.Errorf("archive: %w", err)
	}
	res.TarSHA256 = hex.EncodeToString(tarHash.Sum(nil))
	res.TarSize = count.n
	return res, nil
}

// binaryNames marks a header whose name or link target has a byte outside
// ASCII with the PAX record hdrcharset=BINARY. Git stores names as bytes,
// not text in any charset; a PAX path record is UTF-8 unless that record
// says otherwise (POSIX pax, "hdrcharset"). Without it bsdtar refuses a name
// that is not UTF-8, and in a non-UTF-8 locale (LC_ALL=C) even a UTF-8 one;
// with it bsdtar writes the bytes as they are in every locale, and GNU tar
// (which always does) notes the keyword and extracts. ASCII names get no
// record, so their headers are unchanged.
func binaryNames(h *tar.Header) {
	if isASCII(h.Name) && isASCII(h.Linkname) {
		return
	}
	h.PAXRecords = map[string]string{paxHdrCharset: paxBinary}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

const (
	paxHdrCharset = "hdrcharset"
	paxBinary     = "BINARY"
)

// checkLinkname refuses symlink targets tar cannot carry faithfully.
func checkLinkname(path, target string) error {
	if target == "" || strings.ContainsRune(target, 0) {
		return fmt.Errorf("path %s: symlink with an empty or NUL-containing target", path)
	}
	return nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// hashingWriter counts and hashes what passes to the underlying writer.
type hashingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func newHashingWriter(w io.Writer) *hashingWriter { return &hashingWriter{w: w, h: sha256.New()} }

func (hw *hashingWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	hw.n += int64(n)
	return n, err
}

func (hw *hashingWriter) sum() string { return hex.EncodeToString(hw.h.Sum(nil)) }

// asyncWriter hands copies of what is written to a goroutine that writes
// them to w in order. Write fails once w has failed; close waits for every
// chunk and returns w's first error; abort (after a failure elsewhere)
// stops the goroutine without waiting for w.
type asyncWriter struct {
	ch   chan []byte
	done chan struct{}
	err  error // w's first error, read after done is closed
	mu   sync.Mutex
	fail error // w's first error, visible to Write before done
	shut bool
}

func newAsyncWriter(w io.Writer) *asyncWriter {
	a := &asyncWriter{ch: make(chan []byte, 8), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for p := range a.ch {
			if a.err != nil {
				continue // drain, so Write never blocks on a dead consumer
			}
			if _, err := w.Write(p); err != nil {
				a.err = err
				a.mu.Lock()
				a.fail = err
				a.mu.Unlock()
			}
		}
	}()
	return a
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	err := a.fail
	a.mu.Unlock()
	if err != nil {
		return 0, err
	}
	a.ch <- bytes.Clone(p)
	return len(p), nil
}

func (a *asyncWriter) close() error {
	if !a.shut {
		a.shut = true
		close(a.ch)
	}
	<-a.done
	return a.err
}

func (a *asyncWriter) abort() { _ = a.close() }
