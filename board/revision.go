package board

import (
	"fmt"
	"strconv"
	"strings"
)

// Revision is a decoded Raspberry Pi revision code, the "Revision" line of
// /proc/cpuinfo on a Raspberry Pi kernel (also /proc/device-tree/system/linux,revision).
//
// New-style codes (bit 23 set) are bit fields, as published in the Raspberry Pi
// documentation ("Raspberry Pi revision codes"):
//
//	NOQuuuWuFMMMCCCCPPPPTTTTTTTTRRRR
//	N  bit 31     overvoltage disallowed
//	O  bit 30     OTP programming disallowed
//	Q  bit 29     OTP reading disallowed
//	W  bit 25     warranty voided (overclocked)
//	F  bit 23     1 = new-style code
//	M  bits 20-22 memory size: 256 MB << M (0 = 256 MB ... 6 = 16 GB)
//	C  bits 16-19 manufacturer
//	P  bits 12-15 processor: 0 BCM2835, 1 BCM2836, 2 BCM2837, 3 BCM2711, 4 BCM2712
//	T  bits 4-11  type (model), see typeNames
//	R  bits 0-3   PCB revision (1.R)
//
// Old-style codes (0002-0015) are a fixed table of first-generation boards.
type Revision struct {
	Code         uint32 // raw code as read, for example 0xc03111
	NewStyle     bool   // bit 23
	Type         uint8  // model type code (T), 0x11 = 4B; meaningful only when NewStyle
	TypeName     string // "4B", "Zero 2 W", "5", ...
	Processor    string // "BCM2711", ...
	ProcessorID  uint8  // P
	Manufacturer string // "Sony UK", ...
	MemoryBytes  uint64 // from M; 0 if unknown
	PCBRevision  string // "1.4"
	WarrantyVoid bool   // bit 25 (new style) or bit 24 (old style)
}

// typeNames maps the T field to the model names used in the published table.
var typeNames = map[uint8]string{
	0x00: "A", 0x01: "B", 0x02: "A+", 0x03: "B+", 0x04: "2B", 0x05: "Alpha", 0x06: "CM1",
	0x08: "3B", 0x09: "Zero", 0x0a: "CM3", 0x0c: "Zero W", 0x0d: "3B+", 0x0e: "3A+",
	0x10: "CM3+", 0x11: "4B", 0x12: "Zero 2 W", 0x13: "400", 0x14: "CM4", 0x15: "CM4S",
	0x17: "5", 0x18: "CM5", 0x19: "500", 0x1a: "CM5 Lite",
}

var processorNames = []string{"BCM2835", "BCM2836", "BCM2837", "BCM2711", "BCM2712"}

var manufacturerNames = []string{"Sony UK", "Egoman", "Embest", "Sony Japan", "Embest", "Stadium"}

// oldStyle holds the first-generation codes (type, memory MB, manufacturer).
var oldStyle = map[uint32]struct {
	typ uint8
	mb  uint64
	mfr string
	pcb string
}{
	0x2: {0x01, 256, "Egoman", "1.0"}, 0x3: {0x01, 256, "Egoman", "1.0"},
	0x4: {0x01, 256, "Sony UK", "2.0"}, 0x5: {0x01, 256, "Qisda", "2.0"}, 0x6: {0x01, 256, "Egoman", "2.0"},
	0x7: {0x00, 256, "Egoman", "2.0"}, 0x8: {0x00, 256, "Sony UK", "2.0"}, 0x9: {0x00, 256, "Qisda", "2.0"},
	0xd: {0x01, 512, "Egoman", "2.0"}, 0xe: {0x01, 512, "Sony UK", "2.0"}, 0xf: {0x01, 512, "Egoman", "2.0"},
	0x10: {0x03, 512, "Sony UK", "1.2"}, 0x11: {0x06, 512, "Sony UK", "1.0"}, 0x12: {0x02, 256, "Sony UK", "1.1"},
	0x13: {0x03, 512, "Embest", "1.2"}, 0x14: {0x06, 512, "Embest", "1.0"}, 0x15: {0x02, 256, "Embest", "1.1"},
}

// ParseRevision decodes a revision code as printed in /proc/cpuinfo ("c03111",
// "0x2902120", "1000002"). It returns an error for text that is not hexadecimal or
// for an old-style code that is not in the published table; a zero code ("0000",
// printed by some non-Raspberry Pi OS kernels) is an error too.
func ParseRevision(s string) (Revision, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" {
		return Revision{}, fmt.Errorf("board: empty revision code")
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return Revision{}, fmt.Errorf("board: revision code %q is not hexadecimal", s)
	}
	code := uint32(v)
	r := Revision{Code: code}
	if code&(1<<23) != 0 {
		r.NewStyle = true
		r.WarrantyVoid = code&(1<<25) != 0
		r.Type = uint8(code >> 4)
		r.TypeName = typeNames[r.Type]
		if r.TypeName == "" {
			r.TypeName = fmt.Sprintf("type 0x%02x", r.Type)
		}
		r.ProcessorID = uint8(code>>12) & 0xf
		if int(r.ProcessorID) < len(processorNames) {
			r.Processor = processorNames[r.ProcessorID]
		}
		if m := int(code>>16) & 0xf; m < len(manufacturerNames) {
			r.Manufacturer = manufacturerNames[m]
		}
		if mem := (code >> 20) & 0x7; mem <= 6 {
			r.MemoryBytes = (256 << 20) << mem
		}
		r.PCBRevision = fmt.Sprintf("1.%d", code&0xf)
		return r, nil
	}
	// Old style: bit 24 marks a voided warranty ("1000002").
	r.WarrantyVoid = code&(1<<24) != 0
	o, ok := oldStyle[code&0xffffff]
	if !ok {
		return Revision{}, fmt.Errorf("board: unknown old-style revision code %q", s)
	}
	r.Type, r.TypeName, r.Manufacturer, r.PCBRevision = o.typ, typeNames[o.typ], o.mfr, o.pcb
	r.Processor, r.MemoryBytes = "BCM2835", o.mb<<20
	return r, nil
}
