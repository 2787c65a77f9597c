package logs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FollowPoll is how often Follow looks for new lines.
const FollowPoll = 500 * time.Millisecond

// Follow sends each entry matching q (its limit aside) appended to
// source's current file from now on, until ctx ends or send fails. A
// rotation (the file replaced or shrunk) is followed into the new file
// from its start. idle is called each poll without new lines (the
// stream's keep-alive); an error from it ends the follow.
func Follow(ctx context.Context, dir, source string, q Query, send func(Entry) error, idle func() error) error {
	if !ValidSource(source) {
		return ErrNoSource
	}
	path := filepath.Join(dir, source+".log")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNoSource
	}
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	tick := time.NewTicker(FollowPoll)
	defer tick.Stop()
	var carry []byte
	buf := make([]byte, chunk)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// Rotated: the path names another file, or this one shrank.
		if st, err := os.Stat(path); err == nil {
			cur, _ := f.Stat()
			if cur == nil || !os.SameFile(st, cur) || st.Size() < off {
				if nf, err := os.Open(path); err == nil {
					f.Close()
					f, off, carry = nf, 0, nil
				}
			}
		}
		got := false
		for {
			n, err := f.ReadAt(buf, off)
			if n > 0 {
				got = true
				off += int64(n)
				data := append(carry, buf[:n]...)
				for {
					i := bytes.IndexByte(data, '\n')
					if i < 0 {
						break
					}
					line := data[:i]
					data = data[i+1:]
					if e, ok := ParseLine(line); ok && q.Match(e) {
						if err := send(e); err != nil {
							return err
						}
					}
				}
				carry = append([]byte{}, data...)
				if len(carry) > MaxLineBytes {
					carry = nil
				}
			}
			if err == io.EOF || n == 0 {
				break
			}
			if err != nil {
				return err
			}
		}
		if !got && idle != nil {
			if err := idle(); err != nil {
				return err
			}
		}
	}
}
