package board

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/budgets.md (and the README.md section) from the fixture boards")

const (
	readmeBegin = "<!-- budgets:begin -->"
	readmeEnd   = "<!-- budgets:end -->"
)

// budgetTable renders the identity and derived budget of every fixture board as a
// Markdown table. It is the golden output of TestBudgetTable.
func budgetTable(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("| Fixture | Board | Kind | SoC / CPU | Cores | RAM used (source) | GOMAXPROCS | GOMEMLIMIT | GC heap floor | Open-file cache | Compressed cache | Content cache | FastCGI max_conns | FastCGI queue | Proxy keep-alive | Spool files | pm.max_children | pm | opcache |\n")
	sb.WriteString("|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, fb := range fixtureBoards {
		b, err := Detect(filepath.Join("testdata", fb.dir))
		if err != nil {
			t.Fatal(err)
		}
		bud := ComputeBudget(b, Overrides{})
		src := "MemTotal"
		switch {
		case bud.RAMAssumed:
			src = "unknown, floor"
		case b.MemTotalBytes == 0:
			src = "90% of revision code " + FormatBytes(b.RevisionRAMBytes)
		}
		cpu := b.CPU
		if b.SoC != "" {
			cpu = b.SoC + " " + cpu
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %d | %s (%s) | %d | %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %s | %d MiB |\n",
			fb.dir, b.Model, b.Kind, cpu, b.Cores, FormatBytes(bud.RAMBytes), src, bud.GOMAXPROCS,
			FormatBytes(bud.MemoryLimitBytes), FormatBytes(bud.GCHeapFloorBytes), FormatBytes(bud.OpenFileCacheBytes), FormatBytes(bud.CompressedBytes),
			FormatBytes(bud.ContentCacheBytes), bud.FastCGIMaxConns, bud.FastCGIQueue, bud.ProxyKeepAlive,
			bud.SpoolFiles, bud.PHPMaxChildren, bud.PHPPM, bud.OpcacheMiB)
	}
	return sb.String()
}

// TestBudgetTable checks the derived budgets of every fixture board against
// testdata/budgets.md and, when README.md at the repository root has the
// budgets markers, that README.md holds the same table. -update rewrites both.
func TestBudgetTable(t *testing.T) {
	got := budgetTable(t)
	golden := filepath.Join("testdata", "budgets.md")
	readme := filepath.Join("..", "README.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(readme); err == nil {
			if s, ok := replaceBetween(string(data), got); ok {
				if err := os.WriteFile(readme, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./board -run TestBudgetTable -update)", err)
	}
	if got != string(want) {
		t.Errorf("budget table differs from %s; run go test ./board -run TestBudgetTable -update and review the diff.\ngot:\n%s", golden, got)
	}
	data, err := os.ReadFile(readme)
	if err != nil || !strings.Contains(string(data), readmeBegin) {
		t.Logf("README.md has no %s section; README check skipped", readmeBegin)
		return
	}
	if s, ok := replaceBetween(string(data), got); !ok || s != string(data) {
		t.Errorf("README.md budget table is stale or its markers are broken; run go test ./board -run TestBudgetTable -update")
	}
}

// replaceBetween puts table between the budgets markers of doc.
func replaceBetween(doc, table string) (string, bool) {
	i := strings.Index(doc, readmeBegin)
	j := strings.Index(doc, readmeEnd)
	if i < 0 || j < i {
		return doc, false
	}
	return doc[:i+len(readmeBegin)] + "\n" + table + doc[j:], true
}

func TestBudgetRules(t *testing.T) {
	zero, _ := Detect(filepath.Join("testdata", "rpi-zero-2-w"))
	big, _ := Detect(filepath.Join("testdata", "x86-64-i9-10885h"))
	for _, b := range []Board{zero, big, {Cores: 1, Kind: KindUnknown}} {
		bud := ComputeBudget(b, Overrides{})
		if bud.CacheBytes() > bud.MemoryLimitBytes/2 {
			t.Errorf("%s: caches %d exceed half of the memory limit %d", b.Model, bud.CacheBytes(), bud.MemoryLimitBytes)
		}
		if uint64(bud.MemoryLimitBytes)+uint64(bud.PHPMaxChildren)*PHPWorkerBytes+uint64(bud.OpcacheMiB)*MiB > bud.RAMBytes {
			t.Errorf("%s: arka + php-fpm budget exceeds RAM", b.Model)
		}
		if bud.FastCGIMaxConns != bud.PHPMaxChildren || bud.GOMAXPROCS != max(b.Cores, 1) {
			t.Errorf("%s: %+v", b.Model, bud)
		}
	}
	if bud := ComputeBudget(Board{}, Overrides{}); !bud.RAMAssumed || bud.RAMBytes != FloorRAMBytes {
		t.Errorf("unknown RAM: %+v", bud)
	}
	if ComputeBudget(zero, Overrides{}).PHPPM != PMOnDemand || ComputeBudget(big, Overrides{}).PHPPM != PMStatic {
		t.Error("pm mode")
	}
}

func TestBudgetOverrides(t *testing.T) {
	b, _ := Detect(filepath.Join("testdata", "rpi4-b-4gb"))
	auto := ComputeBudget(b, Overrides{})
	ptr := func(v int) *int { return &v }
	bytes := func(v int64) *int64 { return &v }
	pm := PMStatic
	got := ComputeBudget(b, Overrides{
		GOMAXPROCS: ptr(2), MemoryLimitBytes: bytes(300 * MiB), ContentCacheBytes: bytes(0),
		PHPMaxChildren: ptr(5), PHPPM: &pm, ProxyKeepAlive: ptr(0),
	})
	if got.GOMAXPROCS != 2 || got.MemoryLimitBytes != 300*MiB || got.ContentCacheBytes != MiB ||
		got.PHPMaxChildren != 5 || got.FastCGIMaxConns != 5 || got.FastCGIQueue != 40 ||
		got.PHPPM != PMStatic || got.ProxyKeepAlive != 0 {
		t.Errorf("overrides not applied: %+v", got)
	}
	if got.CompressedBytes != auto.CompressedBytes || got.OpcacheMiB != auto.OpcacheMiB {
		t.Errorf("auto fields changed: %+v vs %+v", got, auto)
	}
	both := ComputeBudget(b, Overrides{PHPMaxChildren: ptr(5), FastCGIMaxConns: ptr(3), FastCGIQueue: ptr(7)})
	if both.FastCGIMaxConns != 3 || both.FastCGIQueue != 7 {
		t.Errorf("explicit max_conns/queue: %+v", both)
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0 B", 1023: "1023 B", 2048: "2 KiB", 3 * MiB / 2: "1.5 MiB", 8 * GiB: "8 GiB", 400 * MiB: "400 MiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestGCHeapFloor checks the derived GC heap floor per board: less on a
// 512 MB Pi Zero 2 W, MaxGCHeapFloorBytes from 1 GB up, inside the memory
// limit everywhere, and that 0 turns it off.
func TestGCHeapFloor(t *testing.T) {
	zero, _ := Detect(filepath.Join("testdata", "rpi-zero-2-w"))
	pi1, _ := Detect(filepath.Join("testdata", "rpi4-b-1gb"))
	pi8, _ := Detect(filepath.Join("testdata", "rpi4-b-8gb"))
	pc := Board{Model: "PC 24 GB", Cores: 2, MemTotalBytes: 24 << 30}
	for _, c := range []struct {
		b    Board
		want int64
	}{
		{zero, 125 * MiB / 8}, // limit 30% of 416 MiB = 124.8 MiB
		{pi1, MaxGCHeapFloorBytes},
		{pi8, MaxGCHeapFloorBytes},
		{pc, MaxGCHeapFloorBytes},
		{Board{}, 125 * MiB / 8}, // unknown RAM: the Pi Zero 2 W's floor
		{Board{Model: "128 MB", Cores: 1, MemTotalBytes: 128 * MiB}, 8 * MiB}, // the 64 MiB minimum limit
	} {
		bud := ComputeBudget(c.b, Overrides{})
		// The limit is 30% of RAM, so the floor is within a MiB of want.
		if d := bud.GCHeapFloorBytes - c.want; d < -MiB || d > MiB {
			t.Errorf("%s: GC heap floor %s, want about %s", c.b.Model, FormatBytes(bud.GCHeapFloorBytes), FormatBytes(c.want))
		}
		if bud.GCHeapFloorBytes > bud.MemoryLimitBytes/4 {
			t.Errorf("%s: GC heap floor %d above a quarter of the memory limit %d", c.b.Model, bud.GCHeapFloorBytes, bud.MemoryLimitBytes)
		}
	}
	off := int64(0)
	if bud := ComputeBudget(pc, Overrides{GCHeapFloorBytes: &off}); bud.GCHeapFloorBytes != 0 {
		t.Errorf("gc_heap_floor 0: floor %d", bud.GCHeapFloorBytes)
	}
	set := int64(64 * MiB)
	if bud := ComputeBudget(zero, Overrides{GCHeapFloorBytes: &set}); bud.GCHeapFloorBytes != set {
		t.Errorf("gc_heap_floor 64MiB: floor %d", bud.GCHeapFloorBytes)
	}
}

// goHeapGoal is the Go runtime's heap goal for GOGC=p after a cycle that
// marked marked bytes and scanned roots bytes of stacks and globals
// (runtime/mgcpacer.go, gcControllerState.commit).
func goHeapGoal(p int, marked, roots uint64) uint64 {
	return max(marked+(marked+roots)*uint64(p)/100, GoHeapMinimumBytes*uint64(p)/100)
}

// TestGCPercent checks that the GOGC from GCPercent puts the runtime's heap
// goal at max(2 x live heap, floor) for each board's floor, from an empty
// heap to one far above the floor.
func TestGCPercent(t *testing.T) {
	pc := ComputeBudget(Board{Cores: 2, MemTotalBytes: 24 << 30}, Overrides{})
	zero, _ := Detect(filepath.Join("testdata", "rpi-zero-2-w"))
	pi4, _ := Detect(filepath.Join("testdata", "rpi4-b-1gb"))
	for _, bud := range []Budget{pc, ComputeBudget(zero, Overrides{}), ComputeBudget(pi4, Overrides{})} {
		floor := uint64(bud.GCHeapFloorBytes)
		for _, marked := range []uint64{0, 1, 100 * KiB, 2 * MiB, 3 * MiB, 5 * MiB, floor / 3, floor/2 - 1, floor / 2, floor - 1, floor, 3 * floor, 100 * floor} {
			for _, roots := range []uint64{0, 200 * KiB, 2 * MiB} {
				p := GCPercent(bud.GCHeapFloorBytes, marked, roots)
				goal := goHeapGoal(p, marked, roots)
				normal := goHeapGoal(100, marked, roots) // Go's default: twice the live heap
				switch {
				case p < 100:
					t.Errorf("floor %s, marked %d: GOGC %d below Go's default", FormatBytes(floor), marked, p)
				case normal >= floor && p != 100:
					t.Errorf("floor %s, marked %d, roots %d: goal %d (GOGC %d), want Go's default goal %d",
						FormatBytes(floor), marked, roots, goal, p, normal)
				case normal < floor && (goal > floor || goal < floor-floor/100):
					// Integer percent: the goal may fall short of the floor
					// by up to (marked+roots)/100, at most 1% of it here.
					t.Errorf("floor %s, marked %d, roots %d: goal %d (GOGC %d), want the floor",
						FormatBytes(floor), marked, roots, goal, p)
				}
			}
		}
	}
	for _, floor := range []int64{0, -1} {
		if p := GCPercent(floor, 0, 0); p != 100 {
			t.Errorf("no floor (%d): GOGC %d, want 100", floor, p)
		}
	}
}
