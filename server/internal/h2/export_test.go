package h2

// ConnStateForTest sums over the server's connections the streams in
// their tables and the streams counted as stalled, and counts the
// connections that are progressing (see conn.progressing).
func (s *Server) ConnStateForTest() (streams, stalled, progressing int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.smu.Lock()
		streams += len(c.streams)
		c.smu.Unlock()
		c.wmu.Lock()
		stalled += c.stalled
		c.wmu.Unlock()
		if c.progressing() {
			progressing++
		}
	}
	return
}

// The control-frame flood bucket (flood.go): its burst and sustained rate
// (frames, frames a second).
const (
	CtrlBurst = ctrlBurst
	CtrlRate  = ctrlRate
)
