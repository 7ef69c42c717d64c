package config

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/proc"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// TestREADMEDefaults keeps the configuration table's defaults on the constants that own them.
func TestREADMEDefaults(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // variable -> default column
	for _, line := range strings.Split(string(b), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) > 4 && strings.HasPrefix(strings.TrimSpace(cols[1]), "`"+Prefix) {
			rows[strings.Trim(strings.TrimSpace(cols[1]), "`")] = strings.TrimSpace(cols[3])
		}
	}
	if len(rows) < 20 {
		t.Fatalf("found %d configuration rows in the README: the table's layout changed", len(rows))
	}
	for name, want := range map[string]string{
		Prefix + "MAX_DOWNLOAD_BYTES":                   "`" + strconv.Itoa(conn.DefaultMaxDownloadBytes) + "`",
		Prefix + "MAX_TRANSFER_BYTES":                   "`" + strconv.Itoa(transfer.DefaultMaxBytes) + "`",
		Prefix + "CLUSTER_DOMAIN":                       "`" + conn.DefaultClusterDomain + "`",
		Prefix + "DNS_SERVER":                           "(system resolver)",
		Prefix + "ALLOW_NO_SHUTDOWN":                    "`" + strconv.FormatBool(defaultAllowNoShutdown) + "`",
		Prefix + "AUTO_RESUME":                          "`" + strconv.FormatBool(defaultAutoResume) + "`",
		Prefix + "SUSPEND_PAUSES_LIFETIME":              "`" + strconv.FormatBool(defaultSuspendPausesLifetime) + "`",
		Prefix + "API_QPS":                              "`" + strconv.Itoa(kube.DefaultQPS) + "`",
		Prefix + "API_BURST":                            "`" + strconv.Itoa(kube.DefaultBurst) + "`",
		Prefix + "PROCESS_OUTPUT_MAX_BYTES":             "`" + strconv.Itoa(proc.DefaultMaxOutputBytes) + "`",
		Prefix + "CUSTOM_SANDBOXES__ALLOWED_IMAGES":     "(off)",
		Prefix + "HOST_PATHS":                           "(off)",
		Prefix + "MAX_VOLUME_SIZE":                      "`" + kube.DefaultMaxVolumeSize + "`",
		Prefix + "READ_ONLY":                            "`false`",
		Prefix + "DISABLE_DESTRUCTIVE":                  "`false`",
		Prefix + "RENEW_ON_USE":                         "`" + strconv.FormatBool(kube.DefaultLifetime().RenewOnUse) + "`",
		Prefix + "MAX_LIFETIME_SECONDS":                 "`" + strconv.Itoa(int(kube.DefaultMaxLifetime/time.Second)) + "`",
		Prefix + "CUSTOM_SANDBOXES__MAX_CPU_MILLICORES": "`" + strconv.Itoa(kube.DefaultCustomMaxCPUMillis) + "`",
		Prefix + "CUSTOM_SANDBOXES__MAX_MEMORY_MIB":     "`" + strconv.Itoa(kube.DefaultCustomMaxMemoryMiB) + "`",
		Prefix + "CUSTOM_SANDBOXES__UNUSED_TTL_SECONDS": "`" + strconv.Itoa(int(kube.DefaultCustomUnusedTTL.Seconds())) + "`",
	} {
		if got, ok := rows[name]; !ok || got != want {
			t.Errorf("README row %s: default %q, want %q", name, got, want)
		}
	}
}
