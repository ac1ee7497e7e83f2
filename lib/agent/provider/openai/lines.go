package openai

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

var errLineBudget = errors.New("stream exceeds its byte budget")

// lineReader yields lines without their terminator (LF or CRLF, as SSE
// allows), refusing to buffer more than budget bytes in total.
type lineReader struct {
	r      *bufio.Reader
	budget int64
}

func newLineReader(r io.Reader, budget int64) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 32<<10), budget: budget}
}

func (l *lineReader) next() (string, error) {
	var b strings.Builder
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.budget -= int64(len(chunk))
		if l.budget < 0 {
			return "", errLineBudget
		}
		b.Write(chunk)
		if err == bufio.ErrBufferFull {
			continue
		}
		s := strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), "\r")
		return s, err
	}
}
