package server

// Version is Arka's version, set at build time with
// -ldflags "-X github.com/arkaweb/arka/server.Version=v1.2.3".
var Version = "dev"
