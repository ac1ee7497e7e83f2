package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// binMember is one file of a binary archive.
type binMember struct {
	Name string // name in the archive (no directories: goreleaser's layout)
	Mode int64  // 0755 for binaries and executable files, else 0644
	Path string // the file on disk
}

// binArchiveName is NAME_VERSION_OS_ARCH[_VARIANT].tar.gz, .zip for
// windows: goreleaser's default name template, so install scripts written
// for it find the file.
func binArchiveName(name, version string, p Platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return name + "_" + version + "_" + p.Suffix() + ext
}

// writeBinArchive writes members, sorted by name, as a tar.gz (USTAR,
// mtime = commit time, uid/gid 0, no owner names, gzip with no name and no
// time, level GzipLevel) or a zip (deflate, the same time in the
// extended-timestamp field and as DOS time in UTC, Unix modes, no extra
// attributes). Nothing of the machine reaches the bytes.
func writeBinArchive(w io.Writer, zipFormat bool, members []binMember, mtime time.Time) error {
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	mtime = mtime.UTC()
	if zipFormat {
		zw := zip.NewWriter(w)
		for _, m := range members {
			h := &zip.FileHeader{Name: m.Name, Method: zip.Deflate, Modified: mtime}
			h.SetMode(os.FileMode(m.Mode))
			fw, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			if err := copyFile(fw, m.Path); err != nil {
				return err
			}
		}
		return zw.Close()
	}
	gz, err := gzip.NewWriterLevel(w, GzipLevel)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, m := range members {
		fi, err := os.Stat(m.Path)
		if err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: m.Name, Mode: m.Mode, Size: fi.Size(), ModTime: mtime, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if err := copyFile(tw, m.Path); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// readBinArchive lists a binary archive's members and their bytes (for
// verify), refusing anything writeBinArchive would not write.
func readBinArchive(p string, zipFormat bool, mtime time.Time, maxSize int64) (map[string][]byte, []string, error) {
	files := map[string][]byte{}
	var names []string
	add := func(name string, mode int64, mt time.Time, r io.Reader) error {
		if name == "" || strings.Contains(name, "/") || name == "." || name == ".." {
			return fmt.Errorf("member %q: not a plain file name", name)
		}
		if mode != 0o755 && mode != 0o644 {
			return fmt.Errorf("member %s: mode %o, want 755 or 644", name, mode)
		}
		if !mt.Equal(mtime) {
			return fmt.Errorf("member %s: time %s, want the commit time %s", name, mt.UTC().Format(time.RFC3339), mtime.UTC().Format(time.RFC3339))
		}
		if len(names) > 0 && names[len(names)-1] >= name {
			return fmt.Errorf("member %s: not in sorted order or a duplicate", name)
		}
		b, err := io.ReadAll(io.LimitReader(r, maxSize+1))
		if err != nil {
			return err
		}
		if int64(len(b)) > maxSize {
			return fmt.Errorf("member %s: larger than %d bytes", name, maxSize)
		}
		files[name] = b
		names = append(names, name)
		return nil
	}
	if zipFormat {
		zr, err := zip.OpenReader(p)
		if err != nil {
			return nil, nil, err
		}
		defer zr.Close()
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				return nil, nil, err
			}
			err = add(f.Name, int64(f.Mode().Perm()), f.Modified, rc)
			rc.Close()
			if err != nil {
				return nil, nil, err
			}
		}
		return files, names, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if h.Typeflag != tar.TypeReg || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || len(h.PAXRecords) > 0 {
			return nil, nil, fmt.Errorf("member %s: not a plain root-owned file without owner names or PAX records", h.Name)
		}
		if err := add(h.Name, h.Mode, h.ModTime, tr); err != nil {
			return nil, nil, err
		}
	}
	return files, names, nil
}

// extractSource unpacks the release's source archive into dest (which
// must exist) and returns the directory holding the tree (dest/NAME-VERSION).
// Binaries are built from these files, never from a worktree: what the
// archive holds is all a build can see. Symlinks whose target leaves the
// tree are not created (a build must not read the builder's files through
// them); the archive's own paths were checked when it was written.
func extractSource(archive, dest string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	top := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		name := strings.TrimSuffix(h.Name, "/")
		if top == "" {
			if h.Typeflag != tar.TypeDir || strings.Contains(name, "/") {
				return "", fmt.Errorf("source archive: first member %s is not the top directory", h.Name)
			}
			top = name
		}
		if !filepath.IsLocal(name) || name != top && !strings.HasPrefix(name, top+"/") {
			return "", fmt.Errorf("source archive: member %s outside %s/", h.Name, top)
		}
		p := filepath.Join(dest, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return "", err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(h.Mode&0o755))
			if err != nil {
				return "", err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", err
			}
		case tar.TypeSymlink:
			target := path.Join(path.Dir(name), h.Linkname)
			if path.IsAbs(h.Linkname) || !filepath.IsLocal(target) || !strings.HasPrefix(target, top+"/") {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			if err := os.Symlink(h.Linkname, p); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("source archive: member %s of type %c", h.Name, h.Typeflag)
		}
	}
	if top == "" {
		return "", fmt.Errorf("source archive: empty")
	}
	return filepath.Join(dest, top), nil
}
