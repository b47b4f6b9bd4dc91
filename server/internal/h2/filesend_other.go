//go:build !linux

package h2

import (
	"io"
	"os"
)

// readFrames reads from f into the frames' payloads, in order, until one
// read comes short. It returns the bytes read; 0 and nil at end of file.
func readFrames(f *os.File, frames [][]byte) (int, error) {
	total := 0
	for _, p := range frames {
		n, err := io.ReadFull(f, p)
		total += n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// parkedFile would be a file given back while its stream waits for
// window; without /proc/self/fd to find its path, files are kept open.
type parkedFile struct{}

func (p *parkedFile) park(f *os.File) bool { return false }

func (p *parkedFile) reopen() (*os.File, error) { return nil, os.ErrInvalid }
