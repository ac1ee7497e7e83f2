package release

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/exitcode"
)

// ErrHostilePath is a tree path that Git itself refuses to check out or
// accept from a peer (git fsck's badTree/hasDotgit family, verify_path in
// read-cache.c): a ".git" component in any spelling a filesystem folds to
// ".git", an empty, "." or ".." component, an absolute path, a NUL, or a
// symlink named .gitmodules. Such a tree is bad input (exit 2): an archive
// holding .git/config would run its core.fsmonitor command on the user's
// next `git status` in the extracted directory.
var ErrHostilePath = exitcode.Sentinel(exitcode.Usage, "path refused")

// hostilePathError names the path (quoted: it may not be printable) and the
// rule it breaks.
type hostilePathError struct {
	path   string
	reason string
}

func (e *hostilePathError) Error() string {
	return fmt.Sprintf("tree path %q: %s: %s", e.path, ErrHostilePath, e.reason)
}
func (e *hostilePathError) Unwrap() error { return ErrHostilePath }

// checkGitPath applies git's rules for a path in a tree (fsck_tree and
// verify_path with core.protectHFS and core.protectNTFS both on, as git
// fsck checks every tree whatever the platform). mode is the Git mode of
// the entry (symlinks have extra rules). It returns nil or a
// *hostilePathError.
func checkGitPath(path string, mode uint32) error {
	bad := func(reason string) error { return &hostilePathError{path: path, reason: reason} }
	switch {
	case path == "":
		return bad("empty path")
	case strings.HasPrefix(path, "/"):
		return bad("absolute path")
	case strings.IndexByte(path, 0) >= 0:
		return bad("contains a NUL byte")
	}
	for _, el := range strings.Split(path, "/") {
		switch {
		case el == "":
			return bad("empty path component")
		case el == "." || el == "..":
			return bad(fmt.Sprintf("%q component", el))
		case isHFSDotGit(el) || isNTFSDotGit(el):
			return bad(fmt.Sprintf("component %q is .git to some filesystem", el))
		}
		// NTFS also splits at a backslash: "a\.git" is a/.git there.
		for i := 0; i < len(el); i++ {
			if el[i] == '\\' && isNTFSDotGit(el[i+1:]) {
				return bad(fmt.Sprintf("component %q holds .git after a backslash", el))
			}
		}
	}
	if mode == modeSymlink {
		last := path[strings.LastIndexByte(path, '/')+1:]
		if isHFSDot(last, "gitmodules") || isNTFSDotGeneric(last, "gitmodules", "gi7eba") {
			return bad(".gitmodules is a symlink")
		}
	}
	return nil
}

// isNTFSDotGit is git's is_ntfs_dotgit: ".git" or the short name "git~1",
// any case, followed only by spaces and periods up to the end, a directory
// separator or an alternate-data-stream colon.
func isNTFSDotGit(name string) bool {
	var rest string
	switch {
	case len(name) >= 4 && name[0] == '.' && strings.EqualFold(name[1:4], "git"):
		rest = name[4:]
	case len(name) >= 5 && strings.EqualFold(name[:3], "git") && name[3:5] == "~1":
		rest = name[5:]
	default:
		return false
	}
	return onlySpacesAndPeriods(rest, true)
}

// onlySpacesAndPeriods reports whether s is spaces and periods up to its
// end, a ':' or (with seps) a '/' or '\'.
func onlySpacesAndPeriods(s string, seps bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' || seps && (c == '/' || c == '\\') {
			return true
		}
		if c != '.' && c != ' ' {
			return false
		}
	}
	return true
}

// isNTFSDotGeneric is git's is_ntfs_dot_generic for a ".NAME" file: the
// name itself, its 6-character short name "name~1".."~4", or the fallback
// short name built from the hash prefix git hard-codes.
func isNTFSDotGeneric(name, dotName, shortPrefix string) bool {
	if len(name) >= 1+len(dotName) && name[0] == '.' && strings.EqualFold(name[1:1+len(dotName)], dotName) {
		return onlySpacesAndPeriods(name[1+len(dotName):], false)
	}
	if len(name) >= 8 && strings.EqualFold(name[:6], dotName[:6]) && name[6] == '~' && name[7] >= '1' && name[7] <= '4' {
		return onlySpacesAndPeriods(name[8:], false)
	}
	sawTilde := false
	i := 0
	for ; i < 8; i++ {
		if i >= len(name) {
			return false
		}
		c := name[i]
		switch {
		case sawTilde:
			if c < '0' || c > '9' {
				return false
			}
		case c == '~':
			i++
			if i >= len(name) || name[i] < '1' || name[i] > '9' {
				return false
			}
			sawTilde = true
		case i >= 6, c&0x80 != 0:
			return false
		case lower(c) != shortPrefix[i]:
			return false
		}
	}
	return onlySpacesAndPeriods(name[i:], false)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isHFSDotGit is git's is_hfs_dotgit: ".git" in any case once the code
// points HFS+ ignores (zero-width joiners, direction marks, BOM) are
// dropped.
func isHFSDotGit(name string) bool { return isHFSDot(name, "git") }

func isHFSDot(name, needle string) bool {
	next := func() (rune, bool) {
		for {
			if name == "" {
				return 0, true
			}
			r, n := utf8.DecodeRuneInString(name)
			if r == utf8.RuneError && n <= 1 {
				return 0, false // malformed UTF-8 cannot be .git
			}
			name = name[n:]
			if hfsIgnored(r) {
				continue
			}
			return r, true
		}
	}
	if r, ok := next(); !ok || r != '.' {
		return false
	}
	for i := 0; i < len(needle); i++ {
		r, ok := next()
		if !ok || r > 127 || rune(lower(byte(r))) != rune(needle[i]) {
			return false
		}
	}
	r, ok := next()
	return ok && (r == 0 || r == '/')
}

func hfsIgnored(r rune) bool {
	switch r {
	case 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0xfeff:
		return true
	}
	return false
}
