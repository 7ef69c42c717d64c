package conn_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeRuntime mirrors examples/python-runtime-sandbox/main.py at v0.5.6: commands are
// shlex-split and run without a shell in a new session with cwd = base; paths are confined
// to base with a leading '/' stripped; path parameters are URL-decoded a second time;
// upload does not create parent directories; status codes and bodies are the runtime's.
type fakeRuntime struct {
	base string
}

func newFakeRuntime(t *testing.T) *fakeRuntime {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &fakeRuntime{base: base}
}

func (f *fakeRuntime) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]string{"status": "ok", "message": "Sandbox Runtime is active."})
	})
	mux.HandleFunc("POST /execute", f.execute)
	mux.HandleFunc("POST /upload", f.upload)
	mux.HandleFunc("GET /download/{path...}", f.download)
	mux.HandleFunc("GET /list/{path...}", f.list)
	mux.HandleFunc("GET /exists/{path...}", f.exists)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func execFailure(w http.ResponseWriter, err error) {
	writeJSON(w, 200, map[string]any{"stdout": "", "stderr": "Failed to execute command: " + err.Error(), "exit_code": 1})
}

func (f *fakeRuntime) execute(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Command *string `json:"command"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Command == nil {
		writeJSON(w, 422, map[string]any{"detail": []map[string]string{{"msg": "Field required"}}})
		return
	}
	args, err := shlexSplit(*req.Command)
	if err != nil {
		execFailure(w, err)
		return
	}
	if len(args) == 0 {
		execFailure(w, errors.New("list index out of range"))
		return
	}
	// Deliberately not bound to r.Context(): like the runtime's worker thread, the command
	// keeps running when the client goes away.
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = f.base
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		execFailure(w, fmt.Errorf("[Errno 2] No such file or directory: '%s'", args[0]))
		return
	}
	timer := time.AfterFunc(300*time.Second, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	timer.Stop()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		ws := exitErr.Sys().(syscall.WaitStatus)
		code = ws.ExitStatus()
		if ws.Signaled() {
			code = -int(ws.Signal()) // Popen.returncode
		}
	}
	if !utf8.Valid(stdout.Bytes()) || !utf8.Valid(stderr.Bytes()) {
		execFailure(w, errors.New("'utf-8' codec can't decode bytes"))
		return
	}
	writeJSON(w, 200, map[string]any{"stdout": pyText(stdout.String()), "stderr": pyText(stderr.String()), "exit_code": code})
}

// pyText applies the newline translation of Popen(text=True).
func pyText(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// safePath is get_safe_path: strip leading '/', join to base, stay inside base.
func (f *fakeRuntime) safePath(p string) (string, bool) {
	full := filepath.Join(f.base, strings.TrimLeft(p, "/"))
	if real, err := filepath.EvalSymlinks(full); err == nil {
		full = real
	}
	return full, full == f.base || strings.HasPrefix(full, f.base+"/")
}

func (f *fakeRuntime) upload(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		writeJSON(w, 422, map[string]string{"detail": "multipart body required"})
		return
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			writeJSON(w, 422, map[string]string{"detail": "file field required"})
			return
		}
		if part.FormName() != "file" {
			continue
		}
		// Not part.FileName(): that applies filepath.Base, the runtime does not.
		_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		name := params["filename"]
		full, ok := f.safePath(name)
		if !ok {
			writeJSON(w, 403, map[string]string{"message": "Access denied"})
			return
		}
		// Streamed to the file, so that the tests of large uploads measure the client only.
		if err := writeFile(full, part); err != nil {
			writeJSON(w, 500, map[string]string{"message": "File upload failed: " + err.Error()})
			return
		}
		writeJSON(w, 200, map[string]string{"message": fmt.Sprintf("File '%s' uploaded successfully.", name)})
		return
	}
}

// pathParam is the route parameter after the handler's own urllib.parse.unquote.
func pathParam(r *http.Request) string {
	return pyUnquote(r.PathValue("path"))
}

// pyUnquote is urllib.parse.unquote: %XX decoded, malformed escapes kept as they are.
func pyUnquote(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b = append(b, byte(v))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (f *fakeRuntime) download(w http.ResponseWriter, r *http.Request) {
	full, ok := f.safePath(pathParam(r))
	if !ok {
		writeJSON(w, 403, map[string]string{"message": "Access denied"})
		return
	}
	if st, err := os.Stat(full); err != nil || !st.Mode().IsRegular() {
		writeJSON(w, 404, map[string]string{"message": "File not found"})
		return
	}
	file, err := os.Open(full)
	if err != nil {
		writeJSON(w, 500, map[string]string{"message": err.Error()})
		return
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		writeJSON(w, 500, map[string]string{"message": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", fmt.Sprint(st.Size()))
	_, _ = io.Copy(w, file)
}

func writeFile(name string, r io.Reader) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

func (f *fakeRuntime) list(w http.ResponseWriter, r *http.Request) {
	full, ok := f.safePath(pathParam(r))
	if !ok {
		writeJSON(w, 403, map[string]string{"message": "Access denied"})
		return
	}
	if st, err := os.Stat(full); err != nil || !st.IsDir() {
		writeJSON(w, 404, map[string]string{"message": "Path is not a directory"})
		return
	}
	dirents, err := os.ReadDir(full)
	if err != nil {
		writeJSON(w, 500, map[string]string{"message": "List files failed: " + err.Error()})
		return
	}
	entries := []map[string]any{}
	for _, d := range dirents {
		st, err := os.Stat(filepath.Join(full, d.Name()))
		if err != nil {
			writeJSON(w, 500, map[string]string{"message": "List files failed: " + err.Error()})
			return
		}
		typ := "file"
		if st.IsDir() {
			typ = "directory"
		}
		entries = append(entries, map[string]any{"name": d.Name(), "size": st.Size(), "type": typ,
			"mod_time": float64(st.ModTime().UnixNano()) / 1e9})
	}
	writeJSON(w, 200, entries)
}

func (f *fakeRuntime) exists(w http.ResponseWriter, r *http.Request) {
	p := pathParam(r)
	full, ok := f.safePath(p)
	if !ok {
		writeJSON(w, 403, map[string]string{"message": "Access denied"})
		return
	}
	_, err := os.Stat(full)
	writeJSON(w, 200, map[string]any{"path": p, "exists": err == nil})
}
