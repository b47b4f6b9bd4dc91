package server

import (
	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/server/internal/spool"
)

// spoolBudget bounds the request bodies that request_buffering spools to
// files in SpoolDir, and the responses response_buffering spools there
// (at most half of it, see spool.ResponseShare; past it a response is
// passed on at the client's pace), for all FastCGI and proxy routes
// together and across reloads: at most b.SpoolFiles open files and b.SpoolBytes bytes (board
// budget; a zero Budget takes the smallest board's), of which one client
// (clientNet, as for the connection limit) holds at most its maxPerAddr
// share. Past it a request gets 503 with Retry-After instead of a file
// descriptor: without it one client with a few HTTP/2 connections could
// open spool files until the process ran out of descriptors and stopped
// accepting connections at all.
func spoolBudget(b board.Budget) *spool.Budget {
	if b.SpoolFiles <= 0 || b.SpoolBytes <= 0 {
		floor := board.ComputeBudget(board.Board{}, board.Overrides{})
		b.SpoolFiles, b.SpoolBytes = floor.SpoolFiles, floor.SpoolBytes
	}
	files, bytes := int64(b.SpoolFiles), b.SpoolBytes
	return spool.NewBudget(files, bytes, maxPerAddr(files), maxPerAddr(bytes), clientNet)
}
