package h2

import (
	"io"
	"os"
	"time"

	"golang.org/x/net/http2"
)

// fileFrame is the payload of the DATA frames a file is read into: a
// frame and its 9-byte header fill one TLS record (16 KiB of plaintext),
// so an output of four frames is four whole records, not four and a
// 36-byte fifth.
const fileFrame = 16<<10 - 9

// maxFileFrames bounds the frames read with one system call: a full
// output (maxQueued) takes five when it does not start at a record's
// boundary.
const maxFileFrames = maxQueued/fileFrame + 1

// fileOf returns the file under src (an *os.File or an io.LimitedReader
// of one, see isFile) and the LimitedReader, if any.
func fileOf(src io.Reader) (*os.File, *io.LimitedReader) {
	if lr, ok := src.(*io.LimitedReader); ok {
		return lr.R.(*os.File), lr
	}
	return src.(*os.File), nil
}

// sendFile copies a file (src, an *os.File or a LimitedReader of one)
// into the response by reading it straight into the connection's output,
// behind the DATA frame header reserved for it: no buffer of the
// stream's own and no copy from it into the output (the output is the
// only plaintext copy of the file's bytes in the process).
//
// It does so while the stream is the connection's only running one and
// the peer's windows take a frame: the read then happens under c.wmu,
// which only the reader goroutine's control frames wait for. Otherwise
// (other streams share the output, or the window is short) it copies
// one frame's worth through a pooled 16 KiB buffer and Write, which
// waits for window, gives up a stalled stream and hands the output to
// the writer as for any body. The response's header must be sent.
func (w *responseWriter) sendFile(src io.Reader) (int64, error) {
	st, c := w.st, w.st.c
	f, lr := fileOf(src)
	// own is the file opened again after the stream gave f back while
	// it waited for window (copyParked); closed here.
	var own *os.File
	defer func() {
		if own != nil {
			own.Close()
		}
	}()
	var total int64
	for {
		want := int64(maxQueued)
		if lr != nil {
			if lr.N <= 0 {
				return total, nil
			}
			want = min(want, lr.N)
		}
		if w.cl >= 0 {
			want = min(want, w.cl-w.written)
		}
		if want <= 0 {
			// The declared length is reached: anything more is an error
			// Write reports (http.ErrContentLength).
			n, err := w.copySlow(src, 16<<10)
			return total + n, err
		}
		alone := c.alone()
		c.wmu.Lock()
		if w.aborted || c.dead {
			c.wmu.Unlock()
			return total, errAborted
		}
		if len(c.out)+9+1<<10 > maxQueued {
			// The output is (about) full: send it.
			if alone && c.wstate.CompareAndSwap(writerIdle, writerRunning) {
				c.wmu.Unlock()
				c.drain(false)
				continue
			}
			c.kickWriterLocked()
			c.wcond.Wait()
			c.wmu.Unlock()
			continue
		}
		n := min(want, st.sendWindow, c.sendConn)
		if n <= 0 {
			// The windows are closed: the stream waits, and gives its
			// file back meanwhile, unless it is the connection's one
			// waiting stream that keeps it.
			keep := c.fileWaits == 0
			if keep {
				c.fileWaits++
			}
			c.wmu.Unlock()
			k, nf, err := w.copyParked(f, src, min(want, 16<<10), !keep)
			if keep {
				c.wmu.Lock()
				c.fileWaits--
				c.wmu.Unlock()
			}
			if nf != f {
				if f == own {
					own = nil // closed by copyParked
				}
				f, own = nf, nf
				if lr != nil {
					lr.R = f
				} else {
					src = f
				}
			}
			total += k
			if err != nil || k == 0 {
				return total, err
			}
			continue
		}
		if !alone {
			c.wmu.Unlock()
			k, err := w.copySlow(src, min(want, 16<<10))
			total += k
			if err != nil || k == 0 {
				return total, err
			}
			continue
		}
		if c.bufs == nil {
			c.acquireOutLocked()
		}
		off := len(c.out)
		if cap(c.out) < maxQueued {
			// Once to a full output, as appendDataLocked grows it.
			out := make([]byte, off, maxQueued)
			copy(out, c.out)
			c.out = out
		}
		// The frames' payloads, behind their headers, up to a full
		// output: read with one system call (readv).
		var sizes [maxFileFrames]int
		var frames [maxFileFrames][]byte
		nf, pos := 0, off
		for left := int(n); left > 0 && nf < maxFileFrames; nf++ {
			d := min(left, fileFrame, int(c.peerMaxFrame), maxQueued-pos-9)
			if d <= 0 || (nf > 0 && d < 1<<10) {
				break
			}
			sizes[nf], frames[nf] = d, c.out[pos+9:pos+9+d]
			pos += 9 + d
			left -= d
		}
		k, rerr := readFrames(f, frames[:nf])
		if lr != nil {
			lr.N -= int64(k)
		}
		if k > 0 {
			pos = off
			for i, got := 0, k; i < nf && got > 0; i++ {
				d := min(sizes[i], got)
				c.dataID, c.dataAt = st.id, pos
				c.out = append(c.out[:pos], byte(d>>16), byte(d>>8), byte(d), byte(http2.FrameData), 0,
					byte(st.id>>24), byte(st.id>>16), byte(st.id>>8), byte(st.id))
				pos += 9 + d
				got -= d
			}
			c.out = c.out[:pos]
			w.written += int64(k)
			st.sendWindow -= int64(k)
			c.sendConn -= int64(k)
			c.streamCredit += int64(k)
			w.waitFrom = time.Time{}
			c.lastProgress = time.Now()
			total += int64(k)
		} else if rerr == nil {
			rerr = io.EOF
		}
		c.wmu.Unlock()
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// regular reports whether f is a regular file, whose reads do not wait
// for a writer: a pipe's may, and must not under c.wmu. (f.Stat rather
// than the descriptor: Fd would put a pipe in blocking mode.)
func regular(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// copyParked is copySlow for a stream whose windows are closed: it reads
// what it will send, then, with park set, gives the file's descriptor
// back (closing f, which may be the handler's: package static opens a
// multipart response's file again when it finds it closed) for as long
// as Write waits for window, and opens the file again when Write has
// queued the bytes. A file opened again must be the same one (device,
// inode, size and modification time) or the stream is reset
// (RST_STREAM INTERNAL_ERROR): its length and ETag were promised.
// Files that cannot be opened again by their path (deleted ones, as
// spooled responses are, or on systems without /proc/self/fd) are kept.
// So streams that wait for window hold at most one descriptor of a file
// per connection (the one waiting stream that keeps its file, see
// sendFile), whatever their number, and a client cannot take the
// process's descriptors with stalled downloads (QA H1). It returns the
// file to read on with: f, or the one opened again.
func (w *responseWriter) copyParked(f *os.File, src io.Reader, max int64, park bool) (int64, *os.File, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	b := *bp
	if int64(len(b)) > max {
		b = b[:max]
	}
	k, rerr := src.Read(b)
	if rerr == io.EOF {
		rerr = nil
	}
	if k == 0 {
		return 0, f, rerr
	}
	var p parkedFile
	parked := park && rerr == nil && p.park(f)
	if _, err := (*plainWriter)(w).Write(b[:k]); err != nil {
		if parked {
			return 0, nil, err
		}
		return 0, f, err
	}
	if !parked {
		return int64(k), f, rerr
	}
	nf, err := p.reopen()
	if err != nil {
		w.giveUp()
		return int64(k), nil, err
	}
	return int64(k), nf, nil
}

// giveUp resets the stream (RST_STREAM INTERNAL_ERROR): its response
// cannot be completed; the handler's writes fail from now on.
func (w *responseWriter) giveUp() {
	c := w.st.c
	c.wmu.Lock()
	w.aborted = true
	c.wcond.Broadcast()
	c.wmu.Unlock()
	w.st.resetLocal(http2.ErrCodeInternal)
}

// copySlow copies at most max bytes of src with one read into a pooled
// buffer and Write. At end of file it returns 0 and nil.
func (w *responseWriter) copySlow(src io.Reader, max int64) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	b := *bp
	if int64(len(b)) > max {
		b = b[:max]
	}
	k, rerr := src.Read(b)
	if k > 0 {
		if _, err := (*plainWriter)(w).Write(b[:k]); err != nil {
			return 0, err
		}
	}
	if rerr == io.EOF {
		rerr = nil
	}
	return int64(k), rerr
}
