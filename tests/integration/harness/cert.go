package harness

import (
	"testing"

	"github.com/arkaweb/arka/tests/testkit"
)

// WriteCert writes a self-signed certificate for names (and 127.0.0.1)
// to dir/cert.pem and dir/key.pem and returns their paths.
func WriteCert(t testing.TB, dir string, names ...string) (certFile, keyFile string) {
	t.Helper()
	return testkit.WriteCert(t, dir, names...)
}
