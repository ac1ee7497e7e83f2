package stateindex

import (
	"bytes"
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
