package stateindex

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
)

// TestHeaderRefusedByItsCRC: every single-bit flip in the header is
// refused by decodeHeader, including those in the fields no other check
// of the header looks at (the sections' CRCs, the digest, the record
// fingerprints): the header's own CRC-32C is what catches them.
func TestHeaderRefusedByItsCRC(t *testing.T) {
	h := header{seq: 5, offset: 400, firstLen: 80, lastLen: 90, tasks: 3, rowsLen: 120}
	h.counts = [5]uint32{1, 1, 1, 0, 0}
	for i := range h.first {
		h.first[i], h.last[i] = byte(i), byte(255-i)
	}
	h.crcs = [4]uint32{1, 2, 3, 4}
	for i := range h.digest {
		h.digest[i] = byte(3 * i)
	}
	good := h.encode()
	if len(good) != headerSize {
		t.Fatalf("encoded header is %d bytes; want %d", len(good), headerSize)
	}
	if _, err := decodeHeader(good); err != nil {
		t.Fatalf("decodeHeader(valid) = %v", err)
	}
	for i := 0; i < headerSize; i++ {
		for bit := 0; bit < 8; bit++ {
			bad := bytes.Clone(good)
			bad[i] ^= 1 << bit
			if _, err := decodeHeader(bad); err == nil {
				t.Fatalf("byte %d bit %d flipped: decodeHeader accepted the header", i, bit)
			}
		}
	}
}

// TestRowSeedIsTheBindingChecksum: the seeds a seeder continues from the
// binding's CRC are the CRC-32C of the whole binding||i that the format
// defines, so indexes written before the seeder still check.
func TestRowSeedIsTheBindingChecksum(t *testing.T) {
	for _, h := range []header{
		{seq: 1, offset: 1},
		{seq: 200001, offset: 1 << 33, first: [32]byte{1, 2, 3}, last: [32]byte{31: 0xff}},
	} {
		s := h.seeder()
		for _, i := range []uint32{0, 1, 255, 256, 199999, math.MaxUint32} {
			var b [8 + 8 + 32 + 32 + 4]byte
			binary.LittleEndian.PutUint64(b[0:], h.seq)
			binary.LittleEndian.PutUint64(b[8:], uint64(h.offset))
			copy(b[16:], h.first[:])
			copy(b[48:], h.last[:])
			binary.LittleEndian.PutUint32(b[80:], i)
			want := crc32.Checksum(b[:], castagnoli)
			if got := s.seed(i); got != want {
				t.Errorf("seq %d row %d: seed %08x, want %08x", h.seq, i, got, want)
			}
			if got := h.rowSeed(i); got != want {
				t.Errorf("seq %d row %d: rowSeed %08x, want %08x", h.seq, i, got, want)
			}
		}
	}
}
