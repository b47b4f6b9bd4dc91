module github.com/arkaweb/arka

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/andybalholm/brotli v1.3.0
	github.com/caddyserver/certmagic v0.25.6
	github.com/coder/websocket v1.8.15
	github.com/gokrazy/gokrazy v0.0.0-20260418085648-c38c3134b8a7
	github.com/hashicorp/mdns v1.0.7
	github.com/klauspost/compress v1.20.4
	github.com/letsencrypt/challtestsrv v1.4.2
	github.com/letsencrypt/pebble/v2 v2.10.3
	github.com/maypok86/otter/v2 v2.4.0
	github.com/mholt/acmez/v3 v3.1.7
	github.com/miekg/dns v1.1.73
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.73.1
	github.com/ulikunitz/xz v0.5.17
	go.uber.org/zap v1.28.0
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
	golang.org/x/text v0.44.0
	google.golang.org/protobuf v1.36.12
	periph.io/x/conn/v3 v3.7.3
	periph.io/x/host/v3 v3.8.5
)

require (
	github.com/beevik/ntp v0.3.0 // indirect
	github.com/gokrazy/internal v0.0.0-20240629150625-a0f1dee26ef5 // indirect
	github.com/google/gopacket v1.1.19 // indirect
	github.com/google/renameio/v2 v2.0.0
	github.com/josharian/native v1.1.0 // indirect
	github.com/kenshaw/evdev v0.1.0 // indirect
	github.com/mdlayher/packet v1.1.2 // indirect
	github.com/mdlayher/socket v0.4.1 // indirect
	github.com/mdlayher/watchdog v0.0.0-20201005150459-8bdc4f41966b // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.3 // indirect
	github.com/rtr7/dhcp4 v0.0.0-20220302171438-18c84d089b46 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/vishvananda/netlink v1.1.0
	github.com/vishvananda/netns v0.0.0-20211101163701-50045581ed74 // indirect
	golang.org/x/sync v0.25.0 // indirect
)

tool (
	github.com/gokrazy/gokrazy/cmd/dhcp
	github.com/gokrazy/gokrazy/cmd/ntp
	github.com/gokrazy/gokrazy/cmd/randomd
	github.com/summerwind/h2spec/cmd/h2spec
	honnef.co/go/tools/cmd/staticcheck
)

require (
	github.com/caddyserver/zerossl v0.1.6 // indirect
	github.com/fatih/color v1.19.0 // indirect
	github.com/go-jose/go-jose/v4 v4.1.8 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/libdns/libdns v1.1.1 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/summerwind/h2spec v2.2.1+incompatible // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap/exp v0.3.0 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
	honnef.co/go/tools v0.7.0 // indirect
)
