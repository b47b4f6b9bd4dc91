package deploy

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/internal/atomicfile"
)

// Store is the device side: generations under Dir, the API on gokrazy's
// web UI listener (Register).
type Store struct {
	// Dir holds generations/N/, generations/N.json, the symlink site ->
	// generations/N and deploy.json. On the device: /perm/arka.
	Dir string
	// Check checks the site in dir (its sites/*.toml) as `arka -t` does
	// and returns the mistakes, one "file:line:col: message" per entry,
	// with file names as Check saw them (under dir); err means the check
	// could not run at all.
	Check func(ctx context.Context, dir string) (mistakes []string, err error)
	// Activate makes Arka serve the site at dir and reload; dir "" means
	// the site baked into the image. An error means Arka did not take it
	// (the old site keeps serving).
	Activate func(dir string) error
	Logf     func(format string, a ...any)
	Now      func() time.Time
	// OnChange, if set, is called after every deploy, rollback or
	// recorded error (the status page follows).
	OnChange func()

	mu        sync.Mutex
	receiving atomic.Int64 // UnixNano when the deploy being received started; 0: none
}

// record is deploy.json.
type record struct {
	Previous    int       `json:"previous,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// SiteLink is the symlink naming the current generation, relative to Dir.
const SiteLink = "site"

func (s *Store) logf(format string, a ...any) {
	if s.Logf != nil {
		s.Logf(format, a...)
	}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) genDir(id int) string { return filepath.Join(s.Dir, "generations", strconv.Itoa(id)) }

// SiteDir returns the directory of the current generation as Arka should
// read it (through the symlink), or "" if nothing was deployed.
func (s *Store) SiteDir() string {
	if s.current() == 0 {
		return ""
	}
	return filepath.Join(s.Dir, SiteLink)
}

// current returns the current generation's number (0: none).
func (s *Store) current() int {
	t, err := os.Readlink(filepath.Join(s.Dir, SiteLink))
	if err != nil {
		return 0
	}
	id, err := strconv.Atoi(strings.TrimPrefix(t, "generations/"))
	if err != nil || !isDir(s.genDir(id)) {
		return 0
	}
	return id
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func (s *Store) readRecord() record {
	var r record
	if b, err := os.ReadFile(filepath.Join(s.Dir, "deploy.json")); err == nil {
		json.Unmarshal(b, &r)
	}
	return r
}

func (s *Store) writeRecord(r record) error {
	b, _ := json.MarshalIndent(r, "", "  ")
	return atomicfile.Write(filepath.Join(s.Dir, "deploy.json"), append(b, '\n'), 0o644)
}

func (s *Store) generation(id int, withManifest bool) *Generation {
	if id == 0 {
		return nil
	}
	b, err := os.ReadFile(s.genDir(id) + ".json")
	if err != nil {
		return nil
	}
	var g Generation
	if json.Unmarshal(b, &g) != nil {
		return nil
	}
	if !withManifest {
		g.Manifest = nil
	}
	return &g
}

// State returns the deployed generations and the last error.
func (s *Store) State() State {
	r := s.readRecord()
	st := State{Current: s.generation(s.current(), true), LastError: r.LastError, LastErrorAt: r.LastErrorAt}
	if n := s.receiving.Load(); n != 0 {
		st.Receiving = time.Unix(0, n).UTC()
	}
	if r.Previous != 0 && isDir(s.genDir(r.Previous)) {
		st.Previous = s.generation(r.Previous, false)
	}
	return st
}

// offered is State for a client planning a deploy: the current manifest
// lists only the files the device still has intact (Store.intact), so the
// client sends the others and a re-deploy repairs a damaged generation.
func (s *Store) offered() State {
	st := s.State()
	if g := st.Current; g != nil {
		var ok []File
		for _, f := range g.Manifest {
			if s.intact(g.ID, f) {
				ok = append(ok, f)
			}
		}
		g.Manifest = ok
	}
	return st
}

// Register serves the API on mux.
func (s *Store) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+PathState, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, s.offered()) })
	mux.HandleFunc("POST "+PathDeploy, s.serveDeploy)
	mux.HandleFunc("POST "+PathRollback, s.serveRollback)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// failure is an error with the HTTP status it is answered with.
type failure struct {
	code int
	res  Result
}

func (s *Store) changed() {
	if s.OnChange != nil {
		s.OnChange()
	}
}

func (s *Store) serveDeploy(w http.ResponseWriter, r *http.Request) {
	if !s.mu.TryLock() {
		writeJSON(w, http.StatusConflict, Result{Message: ErrBusy.Error()})
		return
	}
	defer s.mu.Unlock()
	s.receiving.Store(s.now().UnixNano())
	s.changed()
	defer s.changed()
	defer s.receiving.Store(0)
	g, notServed, f := s.deploy(r.Context(), r.Body)
	if f != nil {
		if len(f.res.Errors) > 0 {
			s.setError("deploy refused: " + strings.Join(f.res.Errors, "; "))
		} else {
			s.setError("deploy failed: " + f.res.Message)
		}
		writeJSON(w, f.code, f.res)
		return
	}
	if notServed != "" {
		writeJSON(w, 200, Result{Generation: g, NotServed: notServed,
			Message: fmt.Sprintf("generation %d is current; %s: Arka serves it when it starts", g.ID, notServed)})
		return
	}
	writeJSON(w, 200, Result{Generation: g, Message: fmt.Sprintf("generation %d is live", g.ID)})
}

func (s *Store) setError(msg string) {
	s.logf("deploy: %s", msg)
	r := s.readRecord()
	r.LastError, r.LastErrorAt = msg, s.now()
	if err := s.writeRecord(r); err != nil {
		s.logf("deploy: %v", err)
	}
}

func bad(code int, format string, a ...any) *failure {
	return &failure{code: code, res: Result{Message: fmt.Sprintf(format, a...)}}
}

// deploy receives a tar stream, builds the next generation, checks it and
// makes it live.
func (s *Store) deploy(ctx context.Context, body io.Reader) (*Generation, string, *failure) {
	if err := os.MkdirAll(filepath.Join(s.Dir, "generations"), 0o755); err != nil {
		return nil, "", bad(500, "%v", err)
	}
	cur := s.current()
	have := map[string]string{} // sha256 -> path of an intact file in the current generation
	if g := s.generation(cur, true); g != nil {
		for _, f := range g.Manifest {
			if s.intact(cur, f) {
				have[f.SHA256] = filepath.Join(s.genDir(cur), filepath.FromSlash(f.Path))
			}
		}
	}
	id := s.nextID()
	tmp := s.genDir(id) + ".tmp"
	os.RemoveAll(tmp)
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()

	tr := tar.NewReader(body)
	h, err := tr.Next()
	if err != nil || h.Name != ManifestName {
		return nil, "", bad(400, "the deploy stream must start with %s", ManifestName)
	}
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(tr, MaxManifestSize)).Decode(&m); err != nil {
		return nil, "", bad(400, "manifest: %v", err)
	}
	if len(m.Files) == 0 || len(m.Files) > MaxFiles {
		return nil, "", bad(400, "manifest: %d files (1 to %d allowed)", len(m.Files), MaxFiles)
	}
	want := map[string]File{}
	var total int64
	for _, f := range m.Files {
		if err := CheckPath(f.Path); err != nil {
			return nil, "", bad(400, "manifest: %v", err)
		}
		if _, dup := want[f.Path]; dup {
			return nil, "", bad(400, "manifest: %q twice", f.Path)
		}
		want[f.Path] = f
		total += f.Size
	}
	// Files sent: written and checked against the manifest.
	got := map[string]bool{}
	var sent int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", bad(400, "receiving: %v", err)
		}
		f, ok := want[h.Name]
		if !ok || got[h.Name] || h.Typeflag != tar.TypeReg {
			return nil, "", bad(400, "%q was sent but is not in the manifest", h.Name)
		}
		if err := writeChecked(filepath.Join(tmp, filepath.FromSlash(f.Path)), tr, f); err != nil {
			return nil, "", bad(400, "%v", err)
		}
		got[h.Name] = true
		sent += f.Size
		if ctx.Err() != nil {
			return nil, "", bad(400, "the client went away")
		}
	}
	// Files not sent: the current generation has their content.
	for _, f := range m.Files {
		if got[f.Path] {
			continue
		}
		src, ok := have[f.SHA256]
		if !ok {
			return nil, "", bad(409, "%s was not sent and the device has no intact file with its content (missing, or damaged since its manifest was read): deploy again to send it", f.Path)
		}
		if err := linkOrCopy(src, filepath.Join(tmp, filepath.FromSlash(f.Path)), f); err != nil {
			return nil, "", bad(500, "%v", err)
		}
	}
	if !isDir(filepath.Join(tmp, "sites")) {
		return nil, "", &failure{code: 422, res: Result{Errors: []string{"sites/: missing: a site directory holds sites/*.toml"}}}
	}
	// The check, exactly as `arka -t`.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	mistakes, err := s.Check(cctx, tmp)
	cancel()
	if err != nil {
		return nil, "", bad(500, "checking the site: %v", err)
	}
	if len(mistakes) > 0 {
		for i, e := range mistakes {
			mistakes[i] = strings.ReplaceAll(e, tmp+string(filepath.Separator), "")
		}
		return nil, "", &failure{code: 422, res: Result{Errors: mistakes}}
	}
	gen := &Generation{ID: id, Deployed: s.now(), From: m.From, Files: len(m.Files), Bytes: total, Sent: sent, Manifest: m.Files}
	// Durable before live: every file was synced as it was written
	// (writeChecked); now every directory of the generation, then the
	// directory that names it after the rename. Without this, ext4's
	// delayed allocation makes the names durable before the data and a
	// power cut after "live" leaves zero-length files.
	if err := syncDirs(tmp); err != nil {
		return nil, "", bad(500, "syncing the new generation: %v", err)
	}
	if err := os.Rename(tmp, s.genDir(id)); err != nil {
		return nil, "", bad(500, "%v", err)
	}
	if err := syncDir(filepath.Dir(s.genDir(id))); err != nil {
		os.RemoveAll(s.genDir(id))
		return nil, "", bad(500, "syncing the new generation: %v", err)
	}
	ok = true
	b, _ := json.MarshalIndent(gen, "", "  ")
	if err := atomicfile.Write(s.genDir(id)+".json", b, 0o644); err != nil {
		return nil, "", bad(500, "%v", err)
	}
	notServed, err := s.switchTo(id, cur)
	if err != nil {
		os.RemoveAll(s.genDir(id))
		os.Remove(s.genDir(id) + ".json")
		var nr *NotReadyError
		if errors.As(err, &nr) && len(nr.Problems) > 0 {
			return nil, "", &failure{code: 422, res: Result{Errors: nr.Problems, Message: err.Error()}}
		}
		return nil, "", bad(500, "%v", err)
	}
	s.prune(id, cur)
	gen.Manifest = nil
	s.logf("deploy: generation %d from %s is current: %d files, %d bytes (%d sent)", id, gen.From, gen.Files, gen.Bytes, gen.Sent)
	return gen, notServed, nil
}

// switchTo points the site symlink at generation id atomically, has Arka
// reload and records prev as the previous generation. If a running Arka
// does not take the new site, the symlink goes back to prev. If Arka is
// not running (Activate's error wraps ErrNotRunning), the symlink stays:
// the site passed the check and Arka reads it when it starts; notServed
// says why it is not served yet.
func (s *Store) switchTo(id, prev int) (notServed string, err error) {
	if err := s.link(id); err != nil {
		return "", err
	}
	if err := s.Activate(filepath.Join(s.Dir, SiteLink)); errors.Is(err, ErrNotRunning) {
		s.logf("deploy: generation %d is current; %v: it is served when Arka starts", id, err)
		notServed = err.Error()
	} else if err != nil {
		s.logf("deploy: Arka did not take generation %d: %v; going back", id, err)
		if prev != 0 {
			s.link(prev)
			s.Activate(filepath.Join(s.Dir, SiteLink))
		} else {
			os.Remove(filepath.Join(s.Dir, SiteLink))
			s.Activate("")
		}
		return "", fmt.Errorf("the server did not take the new site (the old one keeps serving): %w", err)
	}
	r := s.readRecord()
	r.Previous = prev
	r.LastError, r.LastErrorAt = "", time.Time{}
	return notServed, s.writeRecord(r)
}

func (s *Store) link(id int) error {
	tmp := filepath.Join(s.Dir, ".site.new")
	os.Remove(tmp)
	if err := os.Symlink("generations/"+strconv.Itoa(id), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, SiteLink)); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.Dir)
}

// nextID is one more than any generation on disk.
func (s *Store) nextID() int {
	max := 0
	ents, _ := os.ReadDir(filepath.Join(s.Dir, "generations"))
	for _, e := range ents {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".json"), ".tmp"))
		if err == nil && n > max {
			max = n
		}
	}
	return max + 1
}

// prune deletes every generation but keep.
func (s *Store) prune(keep ...int) {
	k := map[string]bool{}
	for _, id := range keep {
		k[strconv.Itoa(id)] = true
	}
	ents, _ := os.ReadDir(filepath.Join(s.Dir, "generations"))
	for _, e := range ents {
		base := strings.TrimSuffix(e.Name(), ".json")
		if !k[base] {
			os.RemoveAll(filepath.Join(s.Dir, "generations", e.Name()))
		}
	}
}

func (s *Store) serveRollback(w http.ResponseWriter, r *http.Request) {
	if !s.mu.TryLock() {
		writeJSON(w, http.StatusConflict, Result{Message: ErrBusy.Error()})
		return
	}
	defer s.mu.Unlock()
	defer s.changed()
	rec := s.readRecord()
	cur := s.current()
	if rec.Previous == 0 || !isDir(s.genDir(rec.Previous)) {
		writeJSON(w, http.StatusConflict, Result{Message: "there is no previous generation to roll back to"})
		return
	}
	to := rec.Previous
	notServed, err := s.switchTo(to, cur)
	if err != nil {
		s.setError("rollback failed: " + err.Error())
		writeJSON(w, 500, Result{Message: err.Error()})
		return
	}
	g := s.generation(to, false)
	s.logf("deploy: rolled back from generation %d to %d", cur, to)
	msg := fmt.Sprintf("rolled back from generation %d to generation %d", cur, to)
	if notServed != "" {
		msg += fmt.Sprintf("; %s: Arka serves it when it starts", notServed)
	}
	writeJSON(w, 200, Result{Generation: g, NotServed: notServed, Message: msg})
}

// writeChecked writes r to path and checks its size and SHA-256.
func writeChecked(path string, r io.Reader, f File) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode(f))
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, f.Size+1))
	if err == nil {
		err = fsync(out)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %v", f.Path, err)
	}
	if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return fmt.Errorf("%s: the content does not match the manifest (%d bytes, want %d; or another SHA-256)", f.Path, n, f.Size)
	}
	return nil
}

func fileMode(f File) os.FileMode {
	if f.Mode&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// fsync is (*os.File).Sync; tests watch it.
var fsync = (*os.File).Sync

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDirs syncs every directory under root, root included (their
// entries; the files were synced as they were written).
func syncDirs(root string) error {
	return filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		return syncDir(p)
	})
}

// intact reports whether generation id still has f as its manifest says,
// judged by size: a stat per file, cheap enough for every deploy and every
// GET of the state. (Hashing would read the whole site at each deploy,
// seconds per 100 MB on a Pi's SD card; since generations are synced
// before they go live, the damage left to find is what a crash did to a
// generation written before that: zero-length or short files.)
func (s *Store) intact(id int, f File) bool {
	st, err := os.Stat(filepath.Join(s.genDir(id), filepath.FromSlash(f.Path)))
	return err == nil && st.Mode().IsRegular() && st.Size() == f.Size
}

// linkOrCopy makes dst a hard link of src (a file of the current
// generation with the same content), or a copy if linking fails.
func linkOrCopy(src, dst string, f File) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if st, err := os.Stat(src); err == nil && st.Mode().Perm() == fileMode(f) && st.Size() == f.Size {
		if os.Link(src, dst) == nil {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeChecked(dst, in, f)
}

// SortFiles orders a manifest by path.
func SortFiles(fs []File) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
}
