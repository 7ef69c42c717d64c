package usage

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want Figures
		err  bool
	}{
		{"cgroup v1", "disk 28 264212084 67309632\ncpu 3007776954 3028939453 ns 22934.88 22935.90\nmem 25186304 12288 536870912\ncpumax 100000 100000\n",
			Figures{DiskUsedBytes: 28 << 10, DiskTotalBytes: 264212084 << 10, DiskFreeBytes: 67309632 << 10, Cgroup: true, CPUMillis: 20, MemoryBytes: 25174016, CPULimitMillis: 1000, MemLimitBytes: 536870912}, false},
		{"cgroup v2 unlimited", "disk 4 100 50\ncpu 1000 501000 us 10.00 11.00\nmem 2048 0 max\ncpumax max 100000\n",
			Figures{DiskUsedBytes: 4 << 10, DiskTotalBytes: 100 << 10, DiskFreeBytes: 50 << 10, Cgroup: true, CPUMillis: 500, MemoryBytes: 2048}, false},
		{"v1 unlimited", "disk 4 100 50\ncpu 0 0 ns 1 2\nmem 10 20 9223372036854771712\ncpumax -1 100000\n",
			Figures{DiskUsedBytes: 4 << 10, DiskTotalBytes: 100 << 10, DiskFreeBytes: 50 << 10, Cgroup: true, MemoryBytes: 0}, false},
		{"disk only", "disk 4 100 50\n", Figures{DiskUsedBytes: 4 << 10, DiskTotalBytes: 100 << 10, DiskFreeBytes: 50 << 10, CPUMillis: -1, MemoryBytes: -1, CPULimitMillis: -1, MemLimitBytes: -1}, false},
		{"limits unreadable", "disk 4 100 50\ncpu 0 0 ns 1 2\nmem 1 0 \ncpumax x y\n",
			Figures{DiskUsedBytes: 4 << 10, DiskTotalBytes: 100 << 10, DiskFreeBytes: 50 << 10, CPUMillis: 0, MemoryBytes: -1, CPULimitMillis: -1, MemLimitBytes: -1}, false},
		{"no du", "disk -1 100 50\ncpu 0 1000000 ns 1 2\nmem 1 0 2\ncpumax 1 1\n",
			Figures{DiskUsedBytes: -1, DiskTotalBytes: 100 << 10, DiskFreeBytes: 50 << 10, Cgroup: true, CPUMillis: 1, MemoryBytes: 1, CPULimitMillis: 1000, MemLimitBytes: 2}, false},
		{"clock went nowhere", "disk 1 1 1\ncpu 5 9 ns 3 3\nmem 1 0 2\n", Figures{DiskUsedBytes: 1 << 10, DiskTotalBytes: 1 << 10, DiskFreeBytes: 1 << 10, CPUMillis: -1, MemoryBytes: 1, MemLimitBytes: 2, CPULimitMillis: -1}, false},
		{"garbage", "sh: du: not found\n", Figures{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.out)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if !tt.err && got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
