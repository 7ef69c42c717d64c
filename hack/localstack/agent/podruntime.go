package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podRuntime is what runs on the host for one pod: its directory, its forwarders and its
// supervised daemons, all under the pod's own uid.
type podRuntime struct {
	key      string
	uid      types.UID
	n        int // pod IP is 127.0.0.n
	dir      string
	sboxUID  int
	started  time.Time
	daemons  []*daemon
	fwds     []*forwarder
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

func (r *podRuntime) ip() string { return podIP(r.n).String() }

// podDirName is <ns>_<name>_<uid>, unique per pod incarnation.
func podDirName(p *corev1.Pod) string {
	return p.Namespace + "_" + p.Name + "_" + string(p.UID)
}

// wantsPython reports whether a container of p declares the python runtime's port.
func wantsPython(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.ContainerPort == pythonPort {
				return true
			}
		}
	}
	return false
}

// containerEnv is the literal env of the first container, passed to the daemons so claim env
// injection behaves as in a cluster.
func containerEnv(p *corev1.Pod) []string {
	if len(p.Spec.Containers) == 0 {
		return nil
	}
	var env []string
	for _, e := range p.Spec.Containers[0].Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return env
}

// startPodRuntime prepares the pod's directory and starts its forwarders and daemons.
func (a *agent) startPodRuntime(p *corev1.Pod, n int, notify func()) (*podRuntime, error) {
	r := &podRuntime{key: p.Namespace + "/" + p.Name, uid: p.UID, n: n,
		dir: filepath.Join(a.cfg.podsDir, podDirName(p)), sboxUID: a.cfg.uidBase + n, started: time.Now()}
	// Processes a previous agent left under this uid would hold the ports and files.
	if _, err := reapUIDs(context.Background(), uidRange{r.sboxUID, r.sboxUID}); err != nil {
		return nil, err
	}
	ws, app := filepath.Join(r.dir, "workspace"), filepath.Join(r.dir, "app")
	if err := os.MkdirAll(r.dir, 0o711); err != nil {
		return nil, fmt.Errorf("pod dir: %w", err)
	}
	for _, d := range []string{ws, app} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("pod dir: %w", err)
		}
		if err := os.Chown(d, r.sboxUID, r.sboxUID); err != nil {
			return nil, fmt.Errorf("pod dir: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	rest, grpc := localPortBase+2*n, localPortBase+2*n+1
	for _, fw := range [][2]string{
		{hostPort(r.ip(), sandboxdREST), hostPort("127.0.0.1", rest)},
		{hostPort(r.ip(), sandboxdGRPC), hostPort("127.0.0.1", grpc)},
	} {
		f, err := startForwarder(ctx, fw[0], fw[1])
		if err != nil {
			r.stop()
			return nil, err
		}
		r.fwds = append(r.fwds, f)
	}
	env := append([]string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
		"SANDBOX_POD_NAME=" + p.Name, "SANDBOX_POD_NAMESPACE=" + p.Namespace, "SANDBOX_POD_IP=" + r.ip(),
	}, containerEnv(p)...)
	cred := &syscall.Credential{Uid: uint32(r.sboxUID), Gid: uint32(r.sboxUID), Groups: []uint32{}}
	r.daemons = append(r.daemons, &daemon{
		name: "sandboxd", probeURL: "http://" + hostPort(r.ip(), sandboxdREST) + "/v1/health",
		logPath: filepath.Join(r.dir, "sandboxd.log"), grace: a.cfg.stopGrace, notify: notify,
		command: func() (*exec.Cmd, error) {
			cmd := exec.Command(filepath.Join(a.cfg.runtimeDir, "sandboxd"),
				"--rest-port", strconv.Itoa(rest), "--grpc-port", strconv.Itoa(grpc),
				"--root-dir", ws, "--shutdown-timeout", "2s")
			cmd.Dir, cmd.Env = ws, append([]string{"HOME=" + ws}, env...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
			return cmd, nil
		},
	})
	if wantsPython(p) {
		r.daemons = append(r.daemons, &daemon{
			name: "python", probeURL: "http://" + hostPort(r.ip(), pythonPort) + "/",
			logPath: filepath.Join(r.dir, "python.log"), grace: a.cfg.stopGrace, notify: notify,
			command: func() (*exec.Cmd, error) { return a.pythonCommand(r, app, env), nil },
		})
	}
	for _, d := range r.daemons {
		r.wg.Add(1)
		go func() { defer r.wg.Done(); d.supervise(ctx) }()
	}
	return r, nil
}

// pythonCommand runs the unmodified upstream runtime, which hard-codes /app as its base dir:
// a private mount namespace binds the pod's app dir onto /app, then setpriv drops to the pod
// uid (re-arming the parent-death signal the uid change clears) and execs uvicorn.
func (a *agent) pythonCommand(r *podRuntime, app string, env []string) *exec.Cmd {
	uid := strconv.Itoa(r.sboxUID)
	script := `mount --bind "$1" /app && exec setpriv --reuid="$2" --regid="$2" --clear-groups ` +
		`--pdeathsig=KILL -- "$3" -m uvicorn main:app --host "$4" --port "$5" --log-level warning`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
		"sh", app, uid, a.cfg.python, r.ip(), strconv.Itoa(pythonPort))
	cmd.Dir = filepath.Join(a.cfg.runtimeDir, "python")
	cmd.Env = append([]string{"HOME=/app", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// stop ends the daemons (SIGTERM, then SIGKILL), kills whatever else runs under the pod uid
// and closes the forwarders. It does not remove the pod dir.
func (r *podRuntime) stop() {
	r.stopOnce.Do(func() {
		if r.cancel != nil {
			r.cancel()
		}
		r.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = reapUIDs(ctx, uidRange{r.sboxUID, r.sboxUID})
		for _, f := range r.fwds {
			_ = f.close()
		}
	})
}

func hostPort(host string, port int) string { return host + ":" + strconv.Itoa(port) }
