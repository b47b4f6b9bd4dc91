// Package bench holds Arka's benchmarks.
//
//   - `make bench` and `make bench-quick` run the comparison with nginx,
//     Apache, Caddy and lighttpd (harness in ./harness, command in
//     ./cmd/arkabench; results under ./results).
//   - `go test -run '^$' -bench . -benchmem ./tests/bench` (`make bench-go`)
//     measures Arka's hot paths in-process, with clients, an upstream and a
//     FastCGI responder that allocate nothing per request, so that the
//     allocations reported are Arka's own. No external program is needed.
//   - `go test ./tests/bench` checks the generated configurations against
//     the golden files in ./testdata (-update to rewrite them) and, where
//     the servers are installed, that each server accepts its
//     configuration. It starts no server and takes seconds.
package bench
