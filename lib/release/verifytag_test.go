package release

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

// sshSigner generates an ed25519 key with ssh-keygen and configures the
// repository to sign tags with it (gpg.format=ssh) and to trust it
// (gpg.ssh.allowedSignersFile).
func sshSigner(t *testing.T, r *testRepo, trust bool) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "release", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(dir, "allowed_signers")
	line := "committer@example.com " + strings.TrimSpace(string(pub)) + "\n"
	if !trust {
		// Trust some other key only.
		other := filepath.Join(dir, "other")
		exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).Run()
		op, _ := os.ReadFile(other + ".pub")
		line = "committer@example.com " + strings.TrimSpace(string(op)) + "\n"
	}
	os.WriteFile(allowed, []byte(line), 0o644)
	r.git("config", "gpg.format", "ssh")
	r.git("config", "user.signingkey", key)
	r.git("config", "gpg.ssh.allowedSignersFile", allowed)
}

func TestVerifyTag(t *testing.T) {
	ctx := context.Background()
	r := fixtureRepo(t)
	sshSigner(t, r, true)
	head := r.git("rev-parse", "HEAD")
	r.git("tag", "-s", "-m", "release v1.0.0", "v1.0.0")
	r.git("tag", "-a", "-m", "unsigned", "v1.0.1")
	r.git("tag", "v1.0.2") // lightweight

	rep, err := VerifyTag(ctx, VerifyTagOptions{Repo: r.dir, Tag: "v1.0.0"})
	if err != nil {
		t.Fatalf("signed tag at main refused: %v", err)
	}
	if rep.Commit != head || rep.Main != head || rep.MainRef != "refs/heads/main" || !strings.Contains(rep.Signature, "Good") {
		t.Errorf("report %+v", rep)
	}

	refused := func(tag, want string) {
		t.Helper()
		_, err := VerifyTag(ctx, VerifyTagOptions{Repo: r.dir, Tag: tag})
		if !errors.Is(err, ErrTagRefused) || exitcode.Of(err) != exitcode.Failed || !strings.Contains(err.Error(), want) {
			t.Errorf("VerifyTag(%s) = %v (exit %d), want refused with %q", tag, err, exitcode.Of(err), want)
		}
	}
	refused("v1.0.1", "not signed")
	refused("v1.0.2", "lightweight")

	// A tag object moved under another name.
	obj := r.git("rev-parse", "refs/tags/v1.0.0")
	r.git("update-ref", "refs/tags/v9.9.9", obj)
	refused("v9.9.9", "moved or renamed")

	// Main moves on: the tag is no longer at its tip.
	r.write("more.txt", "more\n", 0o644)
	r.commit("feat: more")
	refused("v1.0.0", "points at "+head[:12])

	// A signed tag on a side branch, main untouched.
	r.git("checkout", "-q", "-b", "side")
	r.write("side.txt", "side\n", 0o644)
	r.commit("feat: side work")
	r.git("tag", "-s", "-m", "side", "v1.1.0")
	r.git("checkout", "-q", "main")
	refused("v1.1.0", "refs/heads/main is at")
	// Unless the caller names that branch as main.
	if _, err := VerifyTag(ctx, VerifyTagOptions{Repo: r.dir, Tag: "refs/tags/v1.1.0", MainRef: "refs/heads/side"}); err != nil {
		t.Errorf("explicit main ref: %v", err)
	}

	// origin/main, when present, is what counts.
	r.git("update-ref", "refs/remotes/origin/main", r.git("rev-parse", "side"))
	if rep, err := VerifyTag(ctx, VerifyTagOptions{Repo: r.dir, Tag: "v1.1.0"}); err != nil || rep.MainRef != "refs/remotes/origin/main" {
		t.Errorf("origin/main: %v %+v", err, rep)
	}

	if _, err := VerifyTag(ctx, VerifyTagOptions{Repo: r.dir, Tag: "v7.7.7"}); !errors.Is(err, ErrNotFound) || exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("missing tag: %v, want not found (4)", err)
	}
}

func TestVerifyTagUntrustedSigner(t *testing.T) {
	r := fixtureRepo(t)
	sshSigner(t, r, false)
	r.git("tag", "-s", "-m", "release", "v1.0.0")
	_, err := VerifyTag(context.Background(), VerifyTagOptions{Repo: r.dir, Tag: "v1.0.0"})
	if !errors.Is(err, ErrTagRefused) || !strings.Contains(err.Error(), "signature not accepted") {
		t.Fatalf("tag signed by an unlisted key: %v, want refused", err)
	}
	// git's verdict, not the "Good" line ssh-keygen prints before it.
	if !strings.Contains(err.Error(), "No principal matched") || strings.Contains(err.Error(), "Good") {
		t.Errorf("refusal quotes %q, want git's verdict", err)
	}
}

// TestVerifyTagExpiredKey: a key whose allowed-signers entry has expired is
// refused with the expiry as the reason.
func TestVerifyTagExpiredKey(t *testing.T) {
	r := fixtureRepo(t)
	sshSigner(t, r, true)
	r.git("tag", "-s", "-m", "release", "v1.0.0")
	allowed := r.git("config", "gpg.ssh.allowedSignersFile")
	b, _ := os.ReadFile(allowed)
	principal, key, _ := strings.Cut(string(b), " ")
	writeFile(t, allowed, []byte(principal+` valid-before="20200101" `+key))
	_, err := VerifyTag(context.Background(), VerifyTagOptions{Repo: r.dir, Tag: "v1.0.0"})
	if !errors.Is(err, ErrTagRefused) || !strings.Contains(err.Error(), "expired") || strings.Contains(err.Error(), "Good") {
		t.Fatalf("expired key: %v, want refused naming the expiry", err)
	}
}

// TestVerifyTagRefusesNonReleaseTags: signed tags build would refuse are
// refused here too — not the contract's version shape, or a version the go
// command refuses for the module — and --contract names the contract.
func TestVerifyTagRefusesNonReleaseTags(t *testing.T) {
	r := fixtureRepo(t)
	sshSigner(t, r, true)
	for _, tag := range []string{"not-a-version", "v1.2", "v1.2.3+meta", "v2.0.0"} {
		r.git("tag", "-s", "-m", tag, tag)
		_, err := VerifyTag(context.Background(), VerifyTagOptions{Repo: r.dir, Tag: tag})
		if !errors.Is(err, ErrTagRefused) || !strings.Contains(err.Error(), "not a release version under the contract") {
			t.Errorf("signed tag %s at main: %v, want refused as not a release version", tag, err)
		}
	}
	// Under a contract with prefix "release-", release-1.0.0 is a release tag.
	cf := filepath.Join(t.TempDir(), "c.json")
	writeFile(t, cf, []byte(`{"apiVersion":"art/v1alpha1","kind":"ReleaseContract","name":"fixture","license":"MIT","version":{"tag_prefix":"release-"}}`))
	r.git("tag", "-s", "-m", "r", "release-1.0.0")
	if _, err := VerifyTag(context.Background(), VerifyTagOptions{Repo: r.dir, Tag: "release-1.0.0", ContractFile: cf}); err != nil {
		t.Errorf("release-1.0.0 under prefix release-: %v", err)
	}
	if _, err := VerifyTag(context.Background(), VerifyTagOptions{Repo: r.dir, Tag: "release-1.0.0"}); !errors.Is(err, ErrTagRefused) {
		t.Errorf("release-1.0.0 under the committed contract (prefix v): %v, want refused", err)
	}
}

func TestVerifyTagTamperedSignature(t *testing.T) {
	r := fixtureRepo(t)
	sshSigner(t, r, true)
	r.git("tag", "-s", "-m", "release", "v1.0.0")
	// Re-write the tag object with a changed message but the old signature.
	raw := r.git("cat-file", "tag", "v1.0.0")
	forged := strings.Replace(raw, "release", "relea5e", 1) + "\n"
	cmd := exec.Command("git", "-C", r.dir, "hash-object", "-t", "tag", "-w", "--stdin")
	cmd.Stdin = strings.NewReader(forged)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r.git("update-ref", "refs/tags/v1.0.0", strings.TrimSpace(string(out)))
	_, err = VerifyTag(context.Background(), VerifyTagOptions{Repo: r.dir, Tag: "v1.0.0"})
	if !errors.Is(err, ErrTagRefused) || !strings.Contains(err.Error(), "signature not accepted") {
		t.Fatalf("forged tag: %v, want refused", err)
	}
}
