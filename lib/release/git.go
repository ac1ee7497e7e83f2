package release

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/art-runtime/art/lib/exitcode"
)

// Repo reads one repository's object database through git plumbing: one
// long-lived `git cat-file --batch` process for object contents, and short
// `git ls-tree`, `git rev-parse`, `git for-each-ref` and `git rev-list` runs
// for names and history. It never looks at the worktree or the index, so a
// dirty checkout cannot change what it reads. A Repo is not safe for
// concurrent use.
type Repo struct {
	dir string
	env []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	broken  error  // set when the cat-file stream lost sync; every later read fails
	lastOID string // the object id of the reply being read
	waited  chan struct{}
}

// Git object types as cat-file reports them.
const (
	typeBlob   = "blob"
	typeTree   = "tree"
	typeCommit = "commit"
	typeTag    = "tag"
)

// OpenRepo checks that dir is a Git repository (a worktree or a bare one)
// and starts the cat-file process. Close releases it.
func OpenRepo(ctx context.Context, dir string) (*Repo, error) {
	if dir == "" {
		dir = "."
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, exitcode.Errorf(exitcode.ProgramNotFound, "git: not found on PATH: artrelease reads repositories with git plumbing")
	}
	r := &Repo{dir: dir, env: gitEnv()}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("repository %s: %w: %w", dir, ErrNotFound, err)
	}
	// Whether dir is a repository at all is asked only when a lookup fails
	// (checkRepo): one process fewer on every build.
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	cmd.Env = r.env
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	r.cmd, r.stdin, r.stdout = cmd, in, bufio.NewReaderSize(out, 1<<16)
	r.waited = make(chan struct{})
	go func() {
		// Cancellation kills the reader rather than leaving it blocked.
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-r.waited:
		}
	}()
	return r, nil
}

// gitEnv is the caller's environment with the locale fixed, so that git's
// messages (which verify-tag reports) and sorting do not vary by machine,
// and no terminal prompt can block a build.
func gitEnv() []string {
	env := make([]string, 0, len(os.Environ())+3)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "LC_ALL", "LANG", "LANGUAGE", "GIT_TERMINAL_PROMPT", "GIT_PAGER", "PAGER":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat")
}

// Close stops the cat-file process.
func (r *Repo) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return nil
	}
	_ = r.stdin.Close()
	err := r.cmd.Wait()
	close(r.waited)
	r.cmd = nil
	if r.broken != nil {
		return nil // the process was killed or desynchronised on purpose
	}
	if err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	return nil
}

// git runs one git command in the repository and returns its stdout. A
// failure carries git's own first stderr line.
func (r *Repo) git(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = r.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return stdout.Bytes(), &gitError{args: args, stderr: firstLine(stderr.String()), err: err}
	}
	return stdout.Bytes(), nil
}

type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := "git " + e.args[0] + ": " + e.err.Error()
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

func (e *gitError) Unwrap() error { return e.err }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// ResolveCommit returns the full commit id a revision names, peeling tags.
func (r *Repo) ResolveCommit(ctx context.Context, rev string) (string, error) {
	if !revisionOK(rev) {
		return "", exitcode.Fieldf(exitcode.Usage, "Ref", rev, "ref %q: not a revision", rev)
	}
	out, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		if err := r.checkRepo(ctx); err != nil {
			return "", err
		}
		return "", fmt.Errorf("ref %s: %w: no such commit in %s", rev, ErrNotFound, r.dir)
	}
	return strings.TrimSpace(string(out)), nil
}

// resolveRef returns the object a full ref name points at (unpeeled), and
// false when the ref does not exist.
func (r *Repo) resolveRef(ctx context.Context, ref string) (string, bool) {
	out, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

// revisionOK refuses what cannot be a revision and could be mistaken for
// an option or split a cat-file request line.
func revisionOK(rev string) bool {
	return rev != "" && !strings.HasPrefix(rev, "-") && !strings.ContainsAny(rev, "\n\r\x00")
}

// checkRepo explains a failed lookup: a directory that is not a Git
// repository is not found (4), like a missing ref.
func (r *Repo) checkRepo(ctx context.Context) error {
	if _, err := r.git(ctx, "rev-parse", "--git-dir"); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("repository %s: %w: not a Git repository", r.dir, ErrNotFound)
	}
	return nil
}

// Object is one object read from the database.
type Object struct {
	Type string
	Data []byte
}

// ReadObject returns an object's type and contents.
func (r *Repo) ReadObject(oid string) (Object, error) {
	var obj Object
	err := r.Stream([]string{oid}, func(_ int, typ string, size int64, rd io.Reader) error {
		obj.Type = typ
		obj.Data = make([]byte, size)
		_, err := io.ReadFull(rd, obj.Data)
		return err
	})
	return obj, err
}

// Stream asks cat-file for every oid in order and calls fn with each object's
// type, size and contents. Requests are written by a second goroutine while
// responses are read, so git never waits for the round trip of the previous
// object. fn must not keep rd. A missing object is an error naming it.
func (r *Repo) Stream(oids []string, fn func(i int, typ string, size int64, rd io.Reader) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return errors.New("git cat-file: repository is closed")
	}
	if r.broken != nil {
		return r.broken
	}
	for _, oid := range oids {
		if !isHexOID(oid) {
			return fmt.Errorf("git cat-file: %q is not an object id", oid)
		}
	}
	return r.stream(oids, fn)
}

// stream is Stream without the object-id check: requests may be revision
// expressions (readRev), whose replies name the object they resolved to.
func (r *Repo) stream(oids []string, fn func(i int, typ string, size int64, rd io.Reader) error) error {
	writeErr := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		w := bufio.NewWriterSize(r.stdin, 1<<14)
		for i, oid := range oids {
			select {
			case <-stop:
				writeErr <- nil
				return
			default:
			}
			if _, err := w.WriteString(oid + "\n"); err != nil {
				writeErr <- err
				return
			}
			// Flush at the end and periodically, so git has work while we
			// read without the pipe filling with requests we cannot answer.
			if i == len(oids)-1 || i%64 == 63 {
				if err := w.Flush(); err != nil {
					writeErr <- err
					return
				}
			}
		}
		writeErr <- nil
	}()
	err := r.readAll(oids, fn)
	var me *missingObjectError
	if errors.As(err, &me) && len(oids) == 1 {
		// The only request was answered "missing": nothing else is in
		// flight, the stream is still in step.
		<-writeErr
		return err
	}
	if err != nil {
		// The stream is out of step with the requests still in flight: the
		// only safe state is a dead process.
		close(stop)
		r.broken = fmt.Errorf("git cat-file: stream abandoned after an earlier error: %w", err)
		_ = r.cmd.Process.Kill()
		<-writeErr
		return err
	}
	if werr := <-writeErr; werr != nil {
		r.broken = fmt.Errorf("git cat-file: %w", werr)
		return r.broken
	}
	return nil
}

func (r *Repo) readAll(oids []string, fn func(int, string, int64, io.Reader) error) error {
	for i, oid := range oids {
		line, err := r.stdout.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: reading %s: %w", oid, eofIsUnexpected(err))
		}
		fields := strings.Fields(line)
		if strings.HasSuffix(line, " missing\n") || strings.HasSuffix(line, " ambiguous\n") {
			return &missingObjectError{oid: oid}
		}
		if len(fields) != 3 || (fields[0] != oid && isHexOID(oid)) || !isHexOID(fields[0]) {
			return fmt.Errorf("git cat-file: unexpected reply %q for %s", strings.TrimSpace(line), oid)
		}
		size, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("git cat-file: bad size in %q", strings.TrimSpace(line))
		}
		lr := &io.LimitedReader{R: r.stdout, N: size}
		r.lastOID = fields[0]
		if err := fn(i, fields[1], size, lr); err != nil {
			return err
		}
		if lr.N > 0 {
			if _, err := io.Copy(io.Discard, lr); err != nil {
				return fmt.Errorf("git cat-file: reading %s: %w", oid, eofIsUnexpected(err))
			}
			if lr.N > 0 {
				return fmt.Errorf("git cat-file: reading %s: %w", oid, io.ErrUnexpectedEOF)
			}
		}
		if b, err := r.stdout.ReadByte(); err != nil || b != '\n' {
			return fmt.Errorf("git cat-file: object %s not followed by a newline", oid)
		}
	}
	return nil
}

// missingObjectError is cat-file's "missing" (or "ambiguous") reply.
type missingObjectError struct{ oid string }

func (e *missingObjectError) Error() string {
	return fmt.Sprintf("object %s: %s: missing from the repository", e.oid, ErrNotFound)
}
func (e *missingObjectError) Unwrap() error { return ErrNotFound }

// readFileAt returns the bytes of a regular file at path in a commit's
// tree, ok false when there is none (one cat-file round trip:
// "COMMIT:PATH").
func (r *Repo) readFileAt(commit, path string) ([]byte, bool, error) {
	if !isHexOID(commit) || strings.ContainsAny(path, "\n\r\x00") {
		return nil, false, fmt.Errorf("git cat-file: bad request %s:%s", commit, path)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return nil, false, errors.New("git cat-file: repository is closed")
	}
	if r.broken != nil {
		return nil, false, r.broken
	}
	var data []byte
	isBlob := false
	err := r.stream([]string{commit + ":" + path}, func(_ int, typ string, size int64, rd io.Reader) error {
		var err error
		data, err = io.ReadAll(rd)
		isBlob = typ == typeBlob
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, isBlob, nil
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func isHexOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// TreeEntry is one path of a commit's tree, from `git ls-tree -r -t`.
type TreeEntry struct {
	Mode uint32 // Git mode: 040000, 100644, 100755, 120000, 160000
	Type string // blob, tree, commit (a gitlink)
	OID  string
	Path string // slash-separated, relative to the tree root
}

// Git tree modes.
const (
	modeTree    = 0o040000
	modeSymlink = 0o120000
	modeGitlink = 0o160000
	modeTypeMsk = 0o170000
	modeRegular = 0o100000
)

// ListTree lists every entry of a tree, directories included, recursively.
func (r *Repo) ListTree(ctx context.Context, tree string) ([]TreeEntry, error) {
	out, err := r.git(ctx, "ls-tree", "-r", "-t", "-z", "--full-tree", tree)
	var ge *gitError
	if errors.As(err, &ge) && strings.Contains(ge.stderr, "empty filename in tree entry") {
		// git cannot even list it: a tree entry with an empty name.
		return nil, &hostilePathError{path: "", reason: "a tree entry has an empty name (git ls-tree: " + ge.stderr + ")"}
	}
	if err != nil {
		return nil, err
	}
	return parseLsTree(out)
}

// parseLsTree parses `<mode> SP <type> SP <oid> TAB <path> NUL` records.
func parseLsTree(out []byte) ([]TreeEntry, error) {
	var entries []TreeEntry
	for len(out) > 0 {
		end := bytes.IndexByte(out, 0)
		if end < 0 {
			return nil, errors.New("git ls-tree: truncated output")
		}
		rec := out[:end]
		out = out[end+1:]
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			return nil, fmt.Errorf("git ls-tree: malformed record %q", rec)
		}
		f := strings.Fields(string(meta))
		if len(f) != 3 {
			return nil, fmt.Errorf("git ls-tree: malformed record %q", rec)
		}
		mode, err := strconv.ParseUint(f[0], 8, 32)
		if err != nil {
			return nil, fmt.Errorf("git ls-tree: bad mode %q", f[0])
		}
		if err := checkGitPath(string(path), uint32(mode)); err != nil {
			return nil, err
		}
		entries = append(entries, TreeEntry{Mode: uint32(mode), Type: f[1], OID: f[2], Path: string(path)})
	}
	// ls-tree -r -t flattens the trees: a tree entry whose own name holds a
	// slash (fsck's fullPathname) would pass as a nested path. Every path's
	// parent must have been listed as a tree, and no path may repeat
	// (duplicateEntries).
	dirs := make(map[string]bool)
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if seen[e.Path] {
			return nil, &hostilePathError{path: e.Path, reason: "listed twice (duplicate tree entries)"}
		}
		seen[e.Path] = true
		if i := strings.LastIndexByte(e.Path, '/'); i >= 0 && !dirs[e.Path[:i]] {
			return nil, &hostilePathError{path: e.Path, reason: "a tree entry name holds a slash"}
		}
		if e.Type == typeTree {
			dirs[e.Path] = true
		}
	}
	return entries, nil
}

// Commit is the parsed header of a commit object.
type Commit struct {
	ID            string
	Tree          string
	Parents       []string
	CommitterTime int64 // seconds since the epoch, from the committer line
	Message       string
}

// readRev resolves a revision expression to a commit and reads it in one
// cat-file round trip ("REF^{commit}"), sparing a rev-parse process.
func (r *Repo) readRev(ctx context.Context, rev string) (*Commit, error) {
	if !revisionOK(rev) {
		return nil, exitcode.Fieldf(exitcode.Usage, "Ref", rev, "ref %q: not a revision", rev)
	}
	var c *Commit
	err := func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.cmd == nil {
			return errors.New("git cat-file: repository is closed")
		}
		if r.broken != nil {
			return r.broken
		}
		return r.stream([]string{rev + "^{commit}"}, func(_ int, typ string, size int64, rd io.Reader) error {
			data, err := io.ReadAll(rd)
			if err != nil {
				return err
			}
			if typ != typeCommit {
				return fmt.Errorf("ref %s: resolves to a %s", rev, typ)
			}
			c, err = parseCommit(r.lastOID, data)
			return err
		})
	}()
	if err != nil {
		// cat-file exits at once outside a repository: say so rather than
		// report its closed pipe.
		if rerr := r.checkRepo(ctx); rerr != nil {
			return nil, rerr
		}
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("ref %s: %w: no such commit in %s", rev, ErrNotFound, r.dir)
		}
		return nil, err
	}
	return c, nil
}

func parseCommit(id string, data []byte) (*Commit, error) {
	c := &Commit{ID: id}
	header, msg, _ := bytes.Cut(data, []byte("\n\n"))
	c.Message = string(msg)
	for _, line := range strings.Split(string(header), "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.Tree = val
		case "parent":
			c.Parents = append(c.Parents, val)
		case "committer":
			t, err := signatureTime(val)
			if err != nil {
				return nil, fmt.Errorf("commit %s: %w", id, err)
			}
			c.CommitterTime = t
		}
	}
	if !isHexOID(c.Tree) {
		return nil, fmt.Errorf("commit %s: no tree", id)
	}
	return c, nil
}

// signatureTime reads the epoch seconds from "Name <email> 1700000000 +0100".
func signatureTime(sig string) (int64, error) {
	i := strings.LastIndexByte(sig, '>')
	if i < 0 {
		return 0, fmt.Errorf("malformed signature %q", sig)
	}
	f := strings.Fields(sig[i+1:])
	if len(f) < 1 {
		return 0, fmt.Errorf("malformed signature %q", sig)
	}
	t, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed signature time %q", f[0])
	}
	return t, nil
}

// TagObject is the parsed header of an annotated tag object.
type TagObject struct {
	Object string
	Type   string
	Name   string
	Signed bool
}

func parseTag(data []byte) TagObject {
	var t TagObject
	header, body, _ := bytes.Cut(data, []byte("\n\n"))
	for _, line := range strings.Split(string(header), "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "object":
			t.Object = val
		case "type":
			t.Type = val
		case "tag":
			t.Name = val
		case "gpgsig", "gpgsig-sha256":
			t.Signed = true
		}
	}
	t.Signed = t.Signed || bytes.Contains(body, []byte("-----BEGIN "))
	return t
}

// RefTag is one tag ref with the commit it leads to.
type RefTag struct {
	Name   string // without refs/tags/
	Object string // what the ref points at: a tag object or a commit
	Type   string // type of Object
	Commit string // the peeled commit ("" when the tag is not of a commit)
}

// Tags lists tags; with merged set, only those reachable from that commit.
func (r *Repo) Tags(ctx context.Context, merged string) ([]RefTag, error) {
	args := []string{"for-each-ref", "--format=%(refname)%00%(objecttype)%00%(objectname)%00%(*objectname)%00%(*objecttype)"}
	if merged != "" {
		args = append(args, "--merged="+merged)
	}
	args = append(args, "refs/tags/")
	out, err := r.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	var tags []RefTag
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\x00")
		if len(f) != 5 {
			return nil, fmt.Errorf("git for-each-ref: malformed line %q", line)
		}
		t := RefTag{Name: strings.TrimPrefix(f[0], "refs/tags/"), Type: f[1], Object: f[2]}
		switch {
		case f[1] == typeCommit:
			t.Commit = f[2]
		case f[4] == typeCommit:
			t.Commit = f[3]
		}
		tags = append(tags, t)
	}
	return tags, nil
}

// RevList lists the commits reachable from commit and not from exclude
// (empty: all), merges included, in no promised order.
func (r *Repo) RevList(ctx context.Context, commit, exclude string) ([]string, error) {
	args := []string{"rev-list", commit}
	if exclude != "" {
		args = append(args, "^"+exclude)
	}
	out, err := r.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// describeArgs is `git describe` naming the nearest tag only;
// previousRelease adds one describeMatch per candidate tag.
func describeArgs() []string { return []string{"describe", "--tags", "--abbrev=0"} }

const describeMatch = "--match"
