// Package health samples the machine's health with gopsutil: the live
// snapshot of /api/v1/stats/now, the sampler that appends one JSON line per
// statistic type to {logs_root}/server-logs/<type>-YYYY-MM-DD.log every
// interval (UTC dates), and the retention that prunes old day-files and
// game-log hour files.
//
// Each day-file line is the part of the snapshot for its type plus the
// sample time "ts" (Unix seconds):
//
//	cpu     {"ts", "load": [1, 5, 15 min], "model", "cores": [{user, nice, sys, idle, irq}]}
//	memory  {"ts", "total", "used", "available", "free"}
//	disk    {"ts", "path", "total", "used", "free"}
//	diskio  {"ts", "readBytes", "writeBytes"}
//	netio   {"ts", "rxBytes", "txBytes"}
//
// Counters are cumulative: a reader diffs two samples. A metric the host
// cannot report is null in the snapshot and has no line in the day-files.
package health

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/layout"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// Snapshot takes the live health snapshot. What the host cannot report is
// left nil (or zero), never an error.
func Snapshot(ctx context.Context) api.Health {
	h := api.Health{TS: time.Now().Unix(), CPU: api.CPUInfo{Cores: []api.CPUTime{}}}
	if info, err := host.InfoWithContext(ctx); err == nil {
		h.Hostname, h.Uptime = info.Hostname, int64(info.Uptime)
	} else if name, err := os.Hostname(); err == nil {
		h.Hostname = name
	}
	if avg, err := load.AvgWithContext(ctx); err == nil {
		h.Load = [3]float64{avg.Load1, avg.Load5, avg.Load15}
	}
	if infos, err := cpu.InfoWithContext(ctx); err == nil && len(infos) > 0 {
		h.CPU.Model = infos[0].ModelName
	}
	if times, err := cpu.TimesWithContext(ctx, true); err == nil {
		for _, t := range times {
			h.CPU.Cores = append(h.CPU.Cores, api.CPUTime{User: t.User, Nice: t.Nice, Sys: t.System, Idle: t.Idle, IRQ: t.Irq})
		}
	}
	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		h.Memory = api.MemoryInfo{Total: vm.Total, Used: vm.Used, Available: vm.Available, Free: vm.Free}
	}
	if u, err := disk.UsageWithContext(ctx, "/"); err == nil {
		h.Disk = &api.DiskInfo{Path: u.Path, Total: u.Total, Used: u.Used, Free: u.Free}
	}
	if io, err := disk.IOCountersWithContext(ctx); err == nil && len(io) > 0 {
		d := &api.DiskIOInfo{}
		for _, c := range io {
			d.ReadBytes += c.ReadBytes
			d.WriteBytes += c.WriteBytes
		}
		h.DiskIO = d
	}
	if io, err := net.IOCountersWithContext(ctx, false); err == nil && len(io) > 0 {
		h.NetIO = &api.NetIOInfo{RxBytes: io[0].BytesRecv, TxBytes: io[0].BytesSent}
	}
	return h
}

// Lines splits a snapshot into the day-file line of each type that the host
// reported, keyed by type.
func Lines(h api.Health) map[string][]byte {
	lines := map[string][]byte{}
	add := func(typ string, v any) {
		b, _ := json.Marshal(v)
		// Put "ts" first: {"ts":N, ...fields}.
		lines[typ] = append([]byte(fmt.Sprintf(`{"ts":%d,`, h.TS)), b[1:]...)
	}
	if len(h.CPU.Cores) > 0 {
		add(api.StatsCPU, struct {
			Load  [3]float64    `json:"load"`
			Model string        `json:"model"`
			Cores []api.CPUTime `json:"cores"`
		}{h.Load, h.CPU.Model, h.CPU.Cores})
	}
	if h.Memory.Total > 0 {
		add(api.StatsMemory, h.Memory)
	}
	if h.Disk != nil {
		add(api.StatsDisk, h.Disk)
	}
	if h.DiskIO != nil {
		add(api.StatsDiskIO, h.DiskIO)
	}
	if h.NetIO != nil {
		add(api.StatsNetIO, h.NetIO)
	}
	return lines
}

// Sampler appends a health sample to the day-files every interval.
type Sampler struct {
	LogsRoot string
	Interval time.Duration
	Logger   *slog.Logger
	// Take takes a snapshot; nil means Snapshot.
	Take func(context.Context) api.Health
}

// Run samples until ctx ends, pruning old files at start and daily.
func (s *Sampler) Run(ctx context.Context) {
	take := s.Take
	if take == nil {
		take = Snapshot
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prune := func() {
		if err := Prune(s.LogsRoot, time.Now()); err != nil {
			log.Warn("pruning old logs", "err", err)
		}
	}
	prune()
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	daily := time.NewTicker(24 * time.Hour)
	defer daily.Stop()
	for {
		if err := s.Append(take(ctx)); err != nil {
			log.Warn("writing health samples", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-daily.C:
			prune()
		case <-tick.C:
		}
	}
}

// Append writes one sample's lines to the day-files of its UTC date. Each
// line goes out in a single write on a file opened for appending, so a
// reader never sees half a line.
func (s *Sampler) Append(h api.Health) error {
	dir := filepath.Join(s.LogsRoot, api.ServerLogsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for typ, line := range Lines(h) {
		path := filepath.Join(dir, layout.StatsFileName(typ, time.Unix(h.TS, 0)))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("opening %s: %w", path, err)
		}
		_, err = f.Write(append(line, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("appending to %s: %w", path, err)
		}
	}
	return nil
}

// Prune removes stats day-files older than 60 days and game-log hour files
// older than 30 days, judged by the date in their names (never by mtime,
// which a copy or restore can change).
func Prune(logsRoot string, now time.Time) error {
	statsCut := now.UTC().AddDate(0, 0, -api.StatsRetentionDays)
	entries, _ := os.ReadDir(filepath.Join(logsRoot, api.ServerLogsDir))
	for _, e := range entries {
		_, day, ok := layout.ParseStatsFileName(e.Name())
		if ok && e.Type().IsRegular() && day.Add(24*time.Hour).Before(statsCut) {
			os.Remove(filepath.Join(logsRoot, api.ServerLogsDir, e.Name()))
		}
	}
	gameCut := now.UTC().AddDate(0, 0, -api.GameLogRetentionDays)
	root := filepath.Join(logsRoot, api.GameLogsDir)
	return filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		_, hour, ok := layout.ParseGameLogFileName(d.Name())
		if ok && hour.Add(time.Hour).Before(gameCut) {
			os.Remove(p)
		}
		return nil
	})
}
