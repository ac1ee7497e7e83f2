package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
)

// TagReport is what VerifyTag established about a tag.
type TagReport struct {
	Tag       string `json:"tag"`
	Object    string `json:"object"`
	Commit    string `json:"commit"`
	MainRef   string `json:"main_ref"`
	Main      string `json:"main"`
	Signature string `json:"signature"`
}

// VerifyTagOptions says which tag to check against which main.
type VerifyTagOptions struct {
	Repo string
	Tag  string // "v1.2.3" or "refs/tags/v1.2.3"
	// MainRef is the branch the tag must be at the tip of. Empty: the
	// remote's view, refs/remotes/origin/main, when it exists (what was
	// pushed is what is published), else refs/heads/main.
	MainRef string
	// ContractFile overrides the release.json committed at the tag's commit
	// (as build --contract does): the tag must be a release version under
	// the contract that will build it.
	ContractFile string
}

// VerifyTag is the gate before publication. It refuses (ErrTagRefused,
// exit 1):
//   - a lightweight tag: it carries no tagger and no signature;
//   - an annotated tag whose object names another tag than its ref (a tag
//     object moved under a new name);
//   - a tag of anything but a commit;
//   - a tag without a signature, or whose signature `git verify-tag` does
//     not accept — GPG or SSH (gpg.format=ssh with
//     gpg.ssh.allowedSignersFile), whichever git is configured for;
//   - a tag whose commit is not exactly the tip of main.
//
// A tag that does not exist is ErrNotFound (exit 4).
func VerifyTag(ctx context.Context, o VerifyTagOptions) (*TagReport, error) {
	r, err := OpenRepo(ctx, o.Repo)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	name := strings.TrimPrefix(o.Tag, "refs/tags/")
	if name == "" || strings.HasPrefix(name, "-") {
		return nil, fmt.Errorf("tag %q: %w", o.Tag, ErrNotFound)
	}
	ref := "refs/tags/" + name
	rep := &TagReport{Tag: name}
	oid, ok := r.resolveRef(ctx, ref)
	if !ok {
		if err := r.checkRepo(ctx); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("tag %s: %w", name, ErrNotFound)
	}
	rep.Object = oid
	obj, err := r.ReadObject(oid)
	if err != nil {
		return nil, err
	}
	if commitID, err := r.ResolveCommit(ctx, ref); err == nil {
		if err := r.checkComplete(ctx, commitID, ref); err != nil {
			return rep, err
		}
	}
	refuse := func(hint, format string, args ...any) error {
		err := fmt.Errorf("tag %s: %w: %s", name, ErrTagRefused, fmt.Sprintf(format, args...))
		if hint != "" {
			return exitcode.WithHint(err, "%s", hint)
		}
		return err
	}
	if obj.Type != typeTag {
		return rep, refuse("create a signed annotated tag: git tag -s "+name+" main; if the tag is annotated in origin, its tag object was not fetched (actions/checkout fetches the tag it checks out this way): git fetch --tags --force origin",
			"lightweight tag (points straight at a %s): no tagger and no signature", obj.Type)
	}
	tag := parseTag(obj.Data)
	if tag.Name != name {
		return rep, refuse("", "the tag object is named %q but the ref is %s: the tag was moved or renamed", tag.Name, ref)
	}
	if tag.Type != typeCommit {
		return rep, refuse("", "tags a %s, not a commit", tag.Type)
	}
	rep.Commit = tag.Object
	if err := r.checkReleaseTag(ctx, name, rep.Commit, o.ContractFile); err != nil {
		var nr *notReleaseTagError
		if errors.As(err, &nr) || exitcode.Of(err) == exitcode.Usage {
			var h *exitcode.Hinted
			hint := "tag the commit PREFIX + a semantic version, as the contract's version.tag_prefix says"
			if errors.As(err, &h) {
				hint = h.Hint()
			}
			return rep, refuse(hint, "not a release version under the contract: %v", err)
		}
		return rep, err
	}
	if !tag.Signed {
		return rep, refuse("create a signed annotated tag: git tag -s "+name+" main", "not signed")
	}
	// git verify-tag reports on stderr; its exit status is the verdict.
	out, verr := r.gitCombined(ctx, "verify-tag", "--end-of-options", ref)
	if verr != nil {
		if ctx.Err() != nil {
			return rep, context.Cause(ctx)
		}
		return rep, refuse("check gpg.format, user.signingkey and, for SSH, gpg.ssh.allowedSignersFile",
			"signature not accepted by git verify-tag: %s", verdictLine(out, true))
	}
	rep.Signature = verdictLine(out, false)

	mainRef, err := r.mainRef(ctx, o.MainRef)
	if err != nil {
		return rep, err
	}
	rep.MainRef = mainRef
	main, err := r.ResolveCommit(ctx, mainRef)
	if err != nil {
		return rep, err
	}
	rep.Main = main
	if main != rep.Commit {
		return rep, refuse("tag the commit at the tip of "+mainRef+" (fetch first if main moved)",
			"points at %s, but %s is at %s", rep.Commit[:12], mainRef, main[:12])
	}
	return rep, nil
}

// mainRef picks the branch tags are checked against.
func (r *Repo) mainRef(ctx context.Context, want string) (string, error) {
	if want != "" {
		if _, ok := r.resolveRef(ctx, want); !ok {
			return "", fmt.Errorf("main ref %s: %w", want, ErrNotFound)
		}
		return want, nil
	}
	for _, ref := range []string{"refs/remotes/origin/main", "refs/heads/main"} {
		if _, ok := r.resolveRef(ctx, ref); ok {
			return ref, nil
		}
	}
	return "", exitcode.WithHint(fmt.Errorf("main branch: %w: neither refs/remotes/origin/main nor refs/heads/main exists", ErrNotFound),
		"fetch main (git fetch origin main) or name the branch with %s", exitcode.Ref("Main"))
}

// gitCombined runs git and returns stdout and stderr together: git
// verify-tag writes its verdict to stderr whether it succeeds or not.
func (r *Repo) gitCombined(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkReleaseTag refuses a tag that build would refuse: not the contract's
// prefix followed by a canonical semantic version (not-a-version, v1.2), or
// a version the go command would refuse for the module (v1.5.0 of a /v2
// module). The contract is the file given, else release.json at the
// commit, else the defaults (prefix "v").
func (r *Repo) checkReleaseTag(ctx context.Context, name, commitID, contractFile string) error {
	var data []byte
	if contractFile != "" {
		b, err := os.ReadFile(contractFile)
		if err != nil {
			return fmt.Errorf("contract %s: %w", contractFile, err)
		}
		data = b
	} else if b, ok, err := r.readFileAt(commitID, ContractPath); err != nil {
		return err
	} else if ok {
		data = b
	}
	c := &Contract{}
	if data != nil {
		var err error
		if c, err = DecodeContract(data); err != nil {
			return err
		}
	}
	prefix := c.Version.Prefix()
	if _, ok := tagVersion(name, prefix); !ok {
		return &notReleaseTagError{fmt.Sprintf("want %s followed by a semantic version such as %s1.2.3", prefixOrNone(prefix), prefix)}
	}
	commit, err := r.readRev(ctx, commitID)
	if err != nil {
		return err
	}
	tree, err := r.ListTree(ctx, commit.Tree)
	if err != nil {
		return err
	}
	reachable, err := r.Tags(ctx, commitID)
	if err != nil {
		return err
	}
	all, err := r.Tags(ctx, "")
	if err != nil {
		return err
	}
	gv := newGoVersioner(r, commit, tree, reachable, all)
	mod := c.Module
	if b, ok, err := r.readFileAt(commitID, "go.mod"); err != nil {
		return err
	} else if ok && mod == "" {
		gm, err := ParseGoMod(b, nil)
		if err != nil {
			return err
		}
		mod = gm.Module
	}
	if mod == "" {
		return nil
	}
	id, err := identify("refs/tags/"+name, commit, reachable, prefix)
	if err != nil {
		return err
	}
	return id.nameGoVersion(gv, mod)
}

// notReleaseTagError is a tag name that is not the contract's prefix and a
// canonical semantic version.
type notReleaseTagError struct{ msg string }

func (e *notReleaseTagError) Error() string { return e.msg }

// verdictLine keeps the line of git's verify output that says why: on
// success the "Good … signature" line; on failure the reason, never the
// "Good" line ssh-keygen prints before git rejects an unlisted principal or
// an expired key, nor gpg's "Good signature" before "This key has expired".
func verdictLine(out string, failed bool) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "object ") {
			lines = append(lines, l)
		}
	}
	good := func(l string) bool { return strings.HasPrefix(l, "Good ") || strings.Contains(l, "Good signature") }
	if !failed {
		for _, l := range lines {
			if good(l) {
				return l
			}
		}
		if len(lines) > 0 {
			return lines[0]
		}
		return ""
	}
	// The most specific reason first.
	for _, needle := range []string{"expired", "revoked", "BAD signature", "Bad signature", "Can't check signature", "No public key",
		"not certified", "No principal matched", "no signature found", "error:", "fatal:"} {
		for _, l := range lines {
			if !good(l) && strings.Contains(l, needle) {
				return l
			}
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if !good(lines[i]) {
			return lines[i]
		}
	}
	return "no verdict from git"
}
