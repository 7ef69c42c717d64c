//go:build !unix

package hostfs

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
