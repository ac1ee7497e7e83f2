package stateindex

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

// indexedQueue is a random queue with an index and a tail after it.
func indexedQueue(t *testing.T, seed uint64) (*gen, []byte) {
	g := newGen(t, seed)
	t.Cleanup(g.close)
	for range 6 {
		g.enqueue()
	}
	for range 40 {
		g.step()
	}
	if !g.writeIndex() {
		t.Fatal("no index")
	}
	for range 5 {
		g.step()
	}
	g.enqueue()
	data, err := os.ReadFile(filepath.Join(g.dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	compare(t, g.dir, true, "intact")
	return g, data
}

func putIndex(t *testing.T, dir string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFlippedBits: a bit flipped anywhere in the index (bit rot, an edit)
// never changes what status prints: the checks refuse the file, or the
// part damaged is refused where status would replay instead.
func TestFlippedBits(t *testing.T) {
	g, data := indexedQueue(t, 3)
	// Every byte of the header, a sample of the body (every row is hit).
	body := 5
	if testing.Short() {
		body = 17
	}
	for off := 0; off < len(data); off++ {
		if off >= headerSize && off%body != 0 {
			continue
		}
		bad := append([]byte(nil), data...)
		bad[off] ^= 1 << (off % 8)
		putIndex(t, g.dir, bad)
		compareAs(t, g.dir, either, fmt.Sprintf("bit flipped at %d", off))
	}
}

// sections splits an index file for forging it consistently.
type forged struct {
	h      *header
	states []byte
	rows   [][]byte // in enqueue order, each with its CRC
	perm   []uint32
}

func split(t *testing.T, data []byte) *forged {
	h, err := decodeHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	n := int(h.tasks)
	f := &forged{h: h, states: append([]byte(nil), data[headerSize:headerSize+n]...)}
	offs := data[headerSize+n:]
	rows := data[headerSize+h.sectionsLen():]
	for i := range n {
		lo, hi := binary.LittleEndian.Uint32(offs[4*i:]), binary.LittleEndian.Uint32(offs[4*i+4:])
		f.rows = append(f.rows, append([]byte(nil), rows[lo:hi]...))
		f.perm = append(f.perm, binary.LittleEndian.Uint32(data[headerSize+int64(n)+4*int64(n+1)+4*int64(i):]))
	}
	return f
}

// join encodes f with every checksum recomputed, as a forger would.
func (f *forged) join() []byte {
	var body []byte
	body = append(body, f.states...)
	var off uint32
	var offs, perm, rows []byte
	offs = binary.LittleEndian.AppendUint32(offs, 0)
	for _, r := range f.rows {
		off += uint32(len(r))
		offs = binary.LittleEndian.AppendUint32(offs, off)
		rows = append(rows, r...)
	}
	for _, p := range f.perm {
		perm = binary.LittleEndian.AppendUint32(perm, p)
	}
	h := *f.h
	h.rowsLen = uint64(len(rows))
	off = 0
	for i, r := range f.rows {
		sealRow(rows[off:off+uint32(len(r))], h.rowSeed(uint32(i)))
		off += uint32(len(r))
	}
	h.crcs = [4]uint32{crc32.Checksum(f.states, castagnoli), crc32.Checksum(offs, castagnoli), crc32.Checksum(perm, castagnoli), crc32.Checksum(rows, castagnoli)}
	body = append(append(append(body, offs...), perm...), rows...)
	h.digest = sha256.Sum256(body)
	return append(h.encode(), body...)
}

// TestForged: edits made with every checksum recomputed. Those the index's
// own consistency checks cannot see (it is a cache: whoever can write the
// queue directory can as well append to the log) are what fsck's comparison
// with the replay reports.
func TestForged(t *testing.T) {
	g, data := indexedQueue(t, 5)
	cases := []struct {
		name string
		edit func(f *forged)
		want expect
	}{
		{"counts edited", func(f *forged) { f.h.counts[0]++; f.h.counts[2]-- }, refused},
		{"a state edited", func(f *forged) { f.states[0] = (f.states[0] + 1) % 5 }, refused},
		{"rows swapped", func(f *forged) {
			f.rows[0], f.rows[1] = f.rows[1], f.rows[0]
			f.states[0], f.states[1] = f.states[1], f.states[0]
			for i, p := range f.perm {
				switch p {
				case 0:
					f.perm[i] = 1
				case 1:
					f.perm[i] = 0
				}
			}
		}, forgery},
		{"perm entries swapped", func(f *forged) { f.perm[0], f.perm[1] = f.perm[1], f.perm[0] }, forgery},
		{"a row dropped", func(f *forged) {
			f.counts(-1)
			f.rows, f.states = f.rows[1:], f.states[1:]
			var perm []uint32
			for _, p := range f.perm {
				if p != 0 {
					perm = append(perm, p-1)
				}
			}
			f.perm = perm
			f.h.tasks--
		}, forgery},
		{"sequence moved on", func(f *forged) { f.h.seq++ }, refused},
		{"offset moved", func(f *forged) { f.h.offset-- }, refused},
		{"another version", func(f *forged) {}, refused},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			f := split(t, data)
			c.edit(f)
			out := f.join()
			if c.name == "another version" {
				binary.LittleEndian.PutUint32(out[8:], version+1)
				binary.LittleEndian.PutUint32(out[headerSize-4:], crc32.Checksum(out[:headerSize-4], castagnoli))
			}
			putIndex(t, g.dir, out)
			compareAs(t, g.dir, c.want, c.name)
		})
	}
	putIndex(t, g.dir, split(t, data).join())
	compare(t, g.dir, true, "split and joined unchanged")
}

func (f *forged) counts(d int) {
	f.h.counts[f.states[0]] = uint32(int(f.h.counts[f.states[0]]) + d)
}

// TestForeignAndOutdated: an index of another queue, one from before the
// log was compacted, one whose log was rewritten, and a truncated file are
// all refused.
func TestForeignAndOutdated(t *testing.T) {
	a, dataA := indexedQueue(t, 7)
	b, _ := indexedQueue(t, 7) // the same history, other times
	putIndex(t, b.dir, dataA)
	compare(t, b.dir, false, "index of another queue")

	putIndex(t, a.dir, dataA[:len(dataA)-1])
	compare(t, a.dir, false, "truncated index")
	putIndex(t, a.dir, dataA)
	compare(t, a.dir, true, "restored")

	// The log rewritten (records re-encoded at other times): refused.
	logPath := filepath.Join(a.dir, file.LogName)
	orig, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	lines := strings.SplitAfter(string(orig), "\n")
	ev, err := queue.DecodeRecord([]byte(strings.TrimSuffix(lines[0], "\n")))
	if err != nil {
		t.Fatal(err)
	}
	ev.Time = ev.Time.Add(1)
	lines[0] = string(queue.AppendRecord(nil, ev)) + "\n"
	if err := os.WriteFile(logPath, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	compare(t, a.dir, false, "log rewritten")
	if err := os.WriteFile(logPath, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	a.open()
	compare(t, a.dir, true, "log restored")
	a.compact()
	compare(t, a.dir, false, "after compaction")
}
