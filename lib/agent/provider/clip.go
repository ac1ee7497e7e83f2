package provider

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// HeadTail cuts s to at most max bytes by keeping its head and its tail
// around a marker that says how many bytes were elided; it returns the
// result and that count. It is a pure function of (s, max), so a replayed
// run produces the same observations, the same assembled conversations and
// the same request hashes. Cuts never split a UTF-8 sequence. max below the
// widest marker keeps only the marker's worth of bytes.
//
// It is the one head-and-tail cut of the agent: the loop cuts observations
// with it (agent.Truncate) and the conversation assembly cuts older
// observations and malformed replies with it.
func HeadTail(s string, max int) (string, int64) {
	if len(s) <= max {
		return s, 0
	}
	room := max - len(elisionMarker(int64(len(s)))) // the widest marker this s can need
	if room < 0 {
		room = 0
	}
	h := room / 2
	t := len(s) - (room - h)
	for i := 0; i < utf8.UTFMax-1 && h > 0 && !utf8.RuneStart(s[h]); i++ {
		h--
	}
	for i := 0; i < utf8.UTFMax-1 && t < len(s) && !utf8.RuneStart(s[t]); i++ {
		t++
	}
	elided := int64(t - h)
	var b bytes.Buffer
	b.Grow(max)
	b.WriteString(s[:h])
	b.WriteString(elisionMarker(elided))
	b.WriteString(s[t:])
	return b.String(), elided
}

func elisionMarker(n int64) string { return fmt.Sprintf("\n[... %d bytes elided ...]\n", n) }
