package release

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
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
	refuse := func(hint, format string, args ...any) error {
		err := fmt.Errorf("tag %s: %w: %s", name, ErrTagRefused, fmt.Sprintf(format, args...))
		if hint != "" {
			return withHint(err, hint)
		}
		return err
	}
	if obj.Type != typeTag {
		return rep, refuse("create a signed annotated tag: git tag -s "+name+" main",
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
			"signature not accepted by git verify-tag: %s", signatureLine(out, true))
	}
	rep.Signature = signatureLine(out, false)

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
	return "", withHint(fmt.Errorf("main branch: %w: neither refs/remotes/origin/main nor refs/heads/main exists", ErrNotFound),
		"fetch main (git fetch origin main) or name the branch with --main")
}

// gitCombined runs git and returns stdout and stderr together: git
// verify-tag writes its verdict to stderr whether it succeeds or not.
func (r *Repo) gitCombined(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// signatureLine keeps the line of git's verify output that matters: the
// verdict ("Good \"git\" signature …", "No principal matched.", …).
func signatureLine(out string, failed bool) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Good ") || strings.Contains(l, "Good signature") {
			return l
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "object ") {
			return l
		}
	}
	if failed {
		return "no verdict from git"
	}
	return ""
}
