package encoding

import (
	"bytes"
	"fmt"
	"io"
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
// them instead of allocating one (and its window, up to megabytes) per
// response. Safe for concurrent use.
type Pools struct {
	mu    sync.Mutex
	pools map[poolKey]*sync.Pool
}

type poolKey struct {
	c     Coding
	level int
}

// zstdWindow bounds zstd's window for responses made per request: 1 MiB
// keeps memory per encoder small on a 512 MB board at a negligible cost in
// ratio for web pages. The decoder side only needs the window we choose.
const zstdWindow = 1 << 20

// brotliWindowBits likewise bounds brotli's window (2^20 bytes) for
// responses made per request.
const brotliWindowBits = 20

func (p *Pools) pool(c Coding, level int) *sync.Pool {
	k := poolKey{c, level}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pools == nil {
		p.pools = map[poolKey]*sync.Pool{}
	}
	sp := p.pools[k]
	if sp == nil {
		sp = &sync.Pool{New: func() any { return newEncoder(c, level) }}
		p.pools[k] = sp
	}
	return sp
}

// Get returns an encoder for coding c at level, writing to w. Levels are
// those of the libraries: zstd 1..4 (klauspost EncoderLevel), brotli 0..11,
// gzip 1..9. Return it with Put after Close.
func (p *Pools) Get(c Coding, level int, w io.Writer) Encoder {
	e := p.pool(c, level).Get().(Encoder)
	e.Reset(w)
	return e
}

// Put returns an encoder obtained from Get. It must have been closed.
func (p *Pools) Put(c Coding, level int, e Encoder) {
	e.Reset(io.Discard)
	p.pool(c, level).Put(e)
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
