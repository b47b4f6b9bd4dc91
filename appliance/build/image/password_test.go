package image

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestPasswordCreatedOnce: builds for one new device at once agree on one
// password, the one in the file, and leave no temporary files.
func TestPasswordCreatedOnce(t *testing.T) {
	for round := 0; round < 20; round++ {
		dir := t.TempDir()
		file := filepath.Join(dir, "garden", "gokr-pw.txt")
		const n = 8
		got := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = (&Config{PasswordFile: file}).password()
			}()
		}
		close(start)
		wg.Wait()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if errs[i] != nil || got[i] != strings.TrimSpace(string(b)) {
				t.Fatalf("round %d: build %d got %q (%v), the file holds %q", round, i, got[i], errs[i], b)
			}
		}
		if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
			t.Errorf("round %d: %d files left in the device directory", round, len(ents))
		}
		if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", st.Mode())
		}
	}
}
