package config

// response_buffering, on fastcgi and proxy routes (default true, as
// nginx's fastcgi_buffering and proxy_buffering): the response is read
// from php-fpm or the upstream as fast as it comes, held for the client in
// memory (64 KiB) and beyond that in an unlinked file in the state
// directory's tmp (at most 1 GiB), and the php-fpm worker or upstream
// connection is released as soon as the backend has finished, however
// slowly the client reads. false passes the response on as the client
// takes it, holding the backend meanwhile (a script that must notice a
// slow client, a stream whose producer should wait for the reader).

// ResponseBufferingEnabled reports whether responses are buffered
// (normalize sets the default).
func (f *FastCGI) ResponseBufferingEnabled() bool {
	return f.ResponseBuffering == nil || *f.ResponseBuffering
}

// ResponseBufferingEnabled reports whether responses are buffered.
func (p *Proxy) ResponseBufferingEnabled() bool {
	return p.ResponseBuffering == nil || *p.ResponseBuffering
}
