package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Scan lists the site in dir: every regular file, except names starting
// with "." (.git, editor files). dir must hold sites/*.toml.
func Scan(dir string) ([]File, error) {
	if m, _ := filepath.Glob(filepath.Join(dir, "sites", "*.toml")); len(m) == 0 {
		return nil, fmt.Errorf("%s: no sites/*.toml: a site directory holds its site files in sites/ and the content they point at (relative paths, e.g. root = \"../www\")", dir)
	}
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			// A symlink is followed if it names a regular file.
			st, err := os.Stat(p)
			if err != nil || !st.Mode().IsRegular() {
				return fmt.Errorf("%s: only regular files can be deployed", p)
			}
		}
		if err := CheckPath(rel); err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		sum, err := hashFile(p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, Size: st.Size(), Mode: uint32(st.Mode().Perm()), SHA256: sum})
		if len(files) > MaxFiles {
			return fmt.Errorf("%s: more than %d files", dir, MaxFiles)
		}
		return nil
	})
	SortFiles(files)
	return files, err
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Client talks to a device's deploy API.
type Client struct {
	Base     string // e.g. "https://arka.local:8443"
	Password string
	HTTP     *http.Client

	// Timeout bounds a request without a site upload, from the start to
	// the end of the answer; default DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout bounds a site upload while nothing moves: the time
	// between two reads of the site's files, and from the last one to
	// the end of the answer (the device checks the site and reloads);
	// default DefaultIdleTimeout. A long upload that keeps moving is not
	// cut off.
	IdleTimeout time.Duration
}

// Default time limits of Client.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
)

// TimeoutError says the device accepted the connection but did not answer
// (or stopped taking the upload) within Limit.
type TimeoutError struct {
	Limit  time.Duration
	Upload bool
}

func (e *TimeoutError) Error() string {
	if e.Upload {
		return fmt.Sprintf("the device took no data and gave no answer for %s: gave up", e.Limit)
	}
	return fmt.Sprintf("the device did not answer within %s: gave up", e.Limit)
}

// RequestTimeout is c.Timeout or its default.
func (c *Client) RequestTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Client) idleTimeout() time.Duration {
	if c.IdleTimeout > 0 {
		return c.IdleTimeout
	}
	return DefaultIdleTimeout
}

// watchdog cancels ctx with a TimeoutError unless kick is called within
// limit of the previous kick.
func watchdog(ctx context.Context, limit time.Duration, upload bool) (context.Context, func(), func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(limit, func() { cancel(&TimeoutError{Limit: limit, Upload: upload}) })
	return ctx, func() { t.Reset(limit) }, func() { t.Stop(); cancel(nil) }
}

// kickReader calls kick on every read.
type kickReader struct {
	r    io.Reader
	kick func()
}

func (k *kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	k.kick()
	return n, err
}

// Errors of the client.
var (
	ErrWrongPassword = errors.New("the device refused the password")
	ErrRefused       = errors.New("the device refused the site")
)

// RefusedError carries the site's mistakes.
type RefusedError struct{ Errors []string }

func (e *RefusedError) Error() string {
	return "the device refused the site; nothing changed:\n" + strings.Join(e.Errors, "\n")
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, out any) error {
	upload := body != nil && method == "POST" && path == PathDeploy
	limit := c.RequestTimeout()
	if upload {
		limit = c.idleTimeout()
	}
	ctx, kick, stop := watchdog(ctx, limit, upload)
	defer stop()
	if upload {
		body = &kickReader{r: body, kick: kick}
	}
	err := c.request(ctx, method, path, body, out)
	if err != nil {
		var te *TimeoutError
		if errors.As(context.Cause(ctx), &te) {
			return te
		}
	}
	return err
}

func (c *Client) request(ctx context.Context, method, path string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return err
	}
	req.SetBasicAuth("gokrazy", c.Password)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-tar")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return ErrWrongPassword
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s %s: 404: this device's software has no deploy API; update it first (arka-appliance update)", method, path)
	}
	var res Result
	if resp.StatusCode != 200 {
		if json.Unmarshal(b, &res) == nil {
			if len(res.Errors) > 0 {
				return &RefusedError{Errors: res.Errors}
			}
			if res.Message != "" {
				return errors.New(res.Message)
			}
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, out)
}

// State fetches the device's deploy state.
func (c *Client) State(ctx context.Context) (*State, error) {
	var st State
	if err := c.do(ctx, "GET", PathState, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Plan is what a deploy will send.
type Plan struct {
	Files     []File // the whole site
	Send      []File // the files whose content the device lacks
	SendBytes int64
	Total     int64
}

// NewPlan compares the site with the device's current generation.
func NewPlan(files []File, st *State) Plan {
	have := map[string]bool{}
	if st != nil && st.Current != nil {
		for _, f := range st.Current.Manifest {
			have[f.SHA256] = true
		}
	}
	p := Plan{Files: files}
	for _, f := range files {
		p.Total += f.Size
		if !have[f.SHA256] {
			p.Send = append(p.Send, f)
			p.SendBytes += f.Size
			have[f.SHA256] = true // the same content twice travels once
		}
	}
	return p
}

// Deploy sends the site in dir according to plan. progress (may be nil)
// is called with the content bytes sent so far.
func (c *Client) Deploy(ctx context.Context, dir, from string, plan Plan, progress func(done, total int64)) (*Result, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeStream(pw, dir, from, plan, progress))
	}()
	var res Result
	err := c.do(ctx, "POST", PathDeploy, pr, &res)
	pr.Close()
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func writeStream(w io.Writer, dir, from string, plan Plan, progress func(done, total int64)) error {
	tw := tar.NewWriter(w)
	m, _ := json.Marshal(Manifest{Files: plan.Files, From: from})
	if err := tw.WriteHeader(&tar.Header{Name: ManifestName, Mode: 0o644, Size: int64(len(m)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(m); err != nil {
		return err
	}
	var done int64
	for _, f := range plan.Send {
		in, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return err
		}
		err = tw.WriteHeader(&tar.Header{Name: f.Path, Mode: int64(fileMode(f)), Size: f.Size, Typeflag: tar.TypeReg})
		if err == nil {
			_, err = io.Copy(tw, &countReader{r: io.LimitReader(in, f.Size), fn: func(n int64) {
				done += n
				if progress != nil {
					progress(done, plan.SendBytes)
				}
			}})
		}
		in.Close()
		if err != nil {
			return fmt.Errorf("%s: %v (did it change while it was sent?)", f.Path, err)
		}
	}
	return tw.Close()
}

type countReader struct {
	r  io.Reader
	fn func(int64)
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.fn(int64(n))
	}
	return n, err
}

// Rollback asks the device to return to the previous generation.
func (c *Client) Rollback(ctx context.Context) (*Result, error) {
	var res Result
	if err := c.do(ctx, "POST", PathRollback, bytes.NewReader(nil), &res); err != nil {
		return nil, err
	}
	return &res, nil
}
