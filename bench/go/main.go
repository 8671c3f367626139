// Go peer of the benchmark suite: time.AfterFunc on the Go runtime's timers (per-P heaps).
//
//	gobench w1 <n>                       arm (time.AfterFunc) + cancel (Timer.Stop)
//	gobench w2 <n> <seconds> <period_ms> periodic timers: each callback re-arms its timer for
//	                                     the next nominal due time (Timer.Reset), lateness (W3)
//	gobench w4 <n>                       RSS per live timer
//	gobench w6 <n> <goroutines>          registration from 1..k goroutines
//
// One JSON object on stdout.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x
}

func (r *rng) deadline() time.Duration {
	return time.Duration(60000+r.next()%60000) * time.Millisecond
}

func cpuS() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6
}

func rssBytes() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l[6:])
			v, _ := strconv.ParseInt(f[0], 10, 64)
			return v * 1024
		}
	}
	return 0
}

const histUS = 2000000

type hist struct {
	b     []uint32
	count uint64
}

func newHist() *hist { return &hist{b: make([]uint32, histUS+1)} }

func (h *hist) add(late time.Duration) {
	us := late.Microseconds()
	if us < 0 {
		us = 0
	}
	if us > histUS {
		us = histUS
	}
	atomic.AddUint32(&h.b[us], 1)
	atomic.AddUint64(&h.count, 1)
}

func (h *hist) pct(p float64) float64 {
	n := atomic.LoadUint64(&h.count)
	if n == 0 {
		return math.NaN()
	}
	want := uint64(math.Ceil(p / 100 * float64(n)))
	if want < 1 {
		want = 1
	}
	var acc uint64
	for i := range h.b {
		acc += uint64(atomic.LoadUint32(&h.b[i]))
		if acc >= want {
			return float64(i)
		}
	}
	return histUS
}

func out(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func noop() {}

func w1Once(n int, seed uint64) (float64, float64, float64, float64) {
	r := rng(seed | 1)
	dl := make([]time.Duration, n)
	for i := range dl {
		dl[i] = r.deadline()
	}
	ts := make([]*time.Timer, n)
	var m0, m1, m2 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	for i, d := range dl {
		ts[i] = time.AfterFunc(d, noop)
	}
	arm := time.Since(t0)
	runtime.ReadMemStats(&m1)
	t1 := time.Now()
	for _, t := range ts {
		t.Stop()
	}
	cancel := time.Since(t1)
	runtime.ReadMemStats(&m2)
	fn := float64(n)
	return float64(arm.Nanoseconds()) / fn, float64(cancel.Nanoseconds()) / fn,
		float64(m1.Mallocs-m0.Mallocs) / fn, float64(m2.Mallocs-m1.Mallocs) / fn
}

func w1(n int) {
	w := n
	if w > 20000 {
		w = 20000
	}
	w1Once(w, 7) // warm-up
	arm, cancel, aa, ac := w1Once(n, 12345)
	out(map[string]any{"arm_ns": arm, "cancel_ns": cancel, "arm_cancel_ns": arm + cancel,
		"allocs_per_arm": aa, "allocs_per_cancel": ac})
}

func w2(n int, seconds float64, periodMS int) {
	period := time.Duration(periodMS) * time.Millisecond
	h := newHist()
	var records uint64
	var measuring int32
	start := time.Now().Add(200*time.Millisecond + time.Duration(5*n)*time.Microsecond)
	for i := 0; i < n; i++ {
		var t *time.Timer
		k := int64(0)
		t = time.AfterFunc(time.Until(start), func() {
			now := time.Now()
			due := start.Add(time.Duration(k) * period)
			if atomic.LoadInt32(&measuring) == 1 {
				h.add(now.Sub(due))
				atomic.AddUint64(&records, 1)
			}
			// fixed rate, skipping late ticks
			k++
			if lk := int64(now.Sub(start)/period) + 1; lk > k {
				k = lk
			}
			t.Reset(time.Until(start.Add(time.Duration(k) * period)))
		})
	}
	time.Sleep(time.Until(start.Add(500 * time.Millisecond)))
	c0 := cpuS()
	atomic.StoreInt32(&measuring, 1)
	time.Sleep(time.Duration(seconds * float64(time.Second)))
	atomic.StoreInt32(&measuring, 0)
	cpu := cpuS() - c0
	rec := atomic.LoadUint64(&records)
	rps := float64(rec) / math.Max(cpu, 1e-9)
	out(map[string]any{"records": rec, "cpu_s": cpu, "records_per_cpu_s": rps, "cpu_ns_per_record": 1e9 / rps,
		"lat_p50_us": h.pct(50), "lat_p99_us": h.pct(99), "lat_p999_us": h.pct(99.9), "crossings_per_record": nil})
}

var keep []*time.Timer

func w4(n int) {
	r := rng(99)
	runtime.GC()
	before := rssBytes()
	keep = make([]*time.Timer, n)
	for i := range keep {
		keep[i] = time.AfterFunc(r.deadline(), noop)
	}
	runtime.GC()
	time.Sleep(300 * time.Millisecond)
	after := rssBytes()
	out(map[string]any{"rss_before": before, "rss_after": after, "bytes_per_timer": float64(after-before) / float64(n)})
}

func w6(n, g int) {
	per := n / g
	dls := make([][]time.Duration, g)
	for j := range dls {
		r := rng(1000 + uint64(j))
		dls[j] = make([]time.Duration, per)
		for i := range dls[j] {
			dls[j][i] = r.deadline()
		}
	}
	var ready, wg sync.WaitGroup
	ready.Add(g)
	startGate := make(chan struct{})
	res := make([][]*time.Timer, g)
	for j := 0; j < g; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			ts := make([]*time.Timer, per)
			ready.Done()
			<-startGate
			for i, d := range dls[j] {
				ts[i] = time.AfterFunc(d, noop)
			}
			res[j] = ts
		}(j)
	}
	ready.Wait()
	t0 := time.Now()
	close(startGate)
	wg.Wait()
	el := time.Since(t0)
	total := per * g
	out(map[string]any{"ns_per_register": float64(el.Nanoseconds()) / float64(total),
		"registrations_per_s": float64(total) / el.Seconds()})
}

func main() {
	a := os.Args
	if len(a) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gobench w1|w2|w4|w6 <n> ...")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(a[2])
	switch a[1] {
	case "w1":
		w1(n)
	case "w2":
		s, _ := strconv.ParseFloat(a[3], 64)
		p, _ := strconv.Atoi(a[4])
		w2(n, s, p)
	case "w4":
		w4(n)
	case "w6":
		g, _ := strconv.Atoi(a[3])
		w6(n, g)
	default:
		os.Exit(2)
	}
}
