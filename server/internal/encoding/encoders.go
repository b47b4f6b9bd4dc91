package encoding

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Encoder is a streaming compressor that can be reset onto a new writer.
type Encoder interface {
	io.WriteCloser
	Flush() error
	Reset(w io.Writer)
}

// Pools hands out encoders per coding and level, so a busy server reuses
// them instead of allocating one per response (about 1 MiB each: a brotli
// or zstd encoder's tables). Idle encoders are kept on a bounded free list,
// not a sync.Pool, because a sync.Pool is emptied at every garbage
// collection and a server under load collects often: that made every
// response pay for a fresh encoder. Safe for concurrent use.
type Pools struct {
	// Keep is how many idle encoders are kept per coding and level;
	// default 2 × GOMAXPROCS.
	Keep int

	mu   sync.Mutex
	free map[poolKey]chan Encoder

	// reuse holds recently coded bodies (reuse.go), shared like the
	// encoders by every middleware of a server.
	reuse reuseCache
}

type poolKey struct {
	c     Coding
	level int
}

// zstdWindow bounds zstd's window for responses made per request: 256 KiB
// keeps an encoder small on a 512 MB board at a negligible cost in ratio
// for web pages; decoders only need the window we choose.
const zstdWindow = 256 << 10

// brotliWindowBits likewise bounds brotli's window (2^18 bytes).
const brotliWindowBits = 18

func (p *Pools) list(c Coding, level int) chan Encoder {
	k := poolKey{c, level}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[poolKey]chan Encoder{}
	}
	ch := p.free[k]
	if ch == nil {
		n := p.Keep
		if n <= 0 {
			n = 2 * runtime.GOMAXPROCS(0)
		}
		ch = make(chan Encoder, n)
		p.free[k] = ch
	}
	return ch
}

// Get returns an encoder for coding c at level, writing to w. Levels are
// those of the libraries: zstd 1..4 (klauspost EncoderLevel), brotli 0..11,
// gzip 1..9. Return it with Put after Close.
func (p *Pools) Get(c Coding, level int, w io.Writer) Encoder {
	var e Encoder
	select {
	case e = <-p.list(c, level):
	default:
		e = newEncoder(c, level)
	}
	e.Reset(w)
	return e
}

// Put returns an encoder obtained from Get. It must have been closed.
func (p *Pools) Put(c Coding, level int, e Encoder) {
	e.Reset(io.Discard)
	select {
	case p.list(c, level) <- e:
	default: // enough kept: let this one go
	}
}

func newEncoder(c Coding, level int) Encoder {
	switch c {
	case Zstd:
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevel(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(zstdWindow),
			zstd.WithLowerEncoderMem(true),
			zstd.WithZeroFrames(true))
		if err != nil {
			panic(fmt.Sprintf("encoding: zstd level %d: %v", level, err)) // levels are validated in config
		}
		return &zstdEncoder{e}
	case Brotli:
		return brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: level, LGWin: brotliWindowBits})
	case Gzip:
		e, err := gzip.NewWriterLevel(nil, level)
		if err != nil {
			panic(fmt.Sprintf("encoding: gzip level %d: %v", level, err))
		}
		return e
	}
	panic("encoding: no encoder for identity")
}

// zstdEncoder adapts *zstd.Encoder, whose Reset has the same shape.
type zstdEncoder struct{ *zstd.Encoder }

func (z *zstdEncoder) Reset(w io.Writer) { z.Encoder.Reset(w) }

// Compress compresses src whole with coding c at level and returns the
// result. It is for static files, compressed once and cached; windows are
// the libraries' defaults for the level (large, for the best ratio).
func Compress(c Coding, level int, src []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(src)/3 + 64)
	var w io.WriteCloser
	switch c {
	case Brotli:
		w = brotli.NewWriterLevel(&buf, level)
	case Gzip:
		g, err := gzip.NewWriterLevel(&buf, level)
		if err != nil {
			return nil, err
		}
		w = g
	case Zstd:
		z, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.EncoderLevel(level)), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		w = z
	default:
		return nil, fmt.Errorf("encoding: cannot compress with %v", c)
	}
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
