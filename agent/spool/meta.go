package spool

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The meta file: magic, then little-endian uint64 ack, last, dropped, corrupt, then the
// CRC-32C of all that.
const (
	metaName  = "meta"
	metaTmp   = "meta.tmp"
	metaMagic = "EWSPOOL1"
	metaBytes = len(metaMagic) + 4*8 + 4
)

// meta is what the spool persists beside the segments.
type meta struct {
	ack     uint64 // every record with ID <= ack was delivered (or dropped)
	last    uint64 // the last ID assigned when the meta was written
	dropped uint64 // records dropped by the cap, ever
	corrupt uint64 // corrupt regions skipped, ever
}

func (m meta) encode() [metaBytes]byte {
	var b [metaBytes]byte
	copy(b[:], metaMagic)
	o := len(metaMagic)
	for _, v := range []uint64{m.ack, m.last, m.dropped, m.corrupt} {
		binary.LittleEndian.PutUint64(b[o:], v)
		o += 8
	}
	binary.LittleEndian.PutUint32(b[o:], crc32.Checksum(b[:o], castagnoli))
	return b
}

var errBadMeta = errors.New("bad meta file")

func decodeMeta(b []byte) (meta, error) {
	o := len(metaMagic)
	if len(b) != metaBytes || string(b[:o]) != metaMagic ||
		binary.LittleEndian.Uint32(b[metaBytes-4:]) != crc32.Checksum(b[:metaBytes-4], castagnoli) {
		return meta{}, errBadMeta
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[o+8*i:]) }
	return meta{ack: u(0), last: u(1), dropped: u(2), corrupt: u(3)}, nil
}

// readMeta returns the zero meta if the file does not exist, and errBadMeta if it is damaged.
func readMeta(dir string) (meta, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaName))
	if errors.Is(err, fs.ErrNotExist) {
		return meta{}, nil
	}
	if err != nil {
		return meta{}, err
	}
	return decodeMeta(b)
}

// writeMeta replaces the meta file atomically: write a temporary file, fsync it, rename it over
// the old one, fsync the directory (the fsyncs unless noSync).
func (s *Spool) writeMeta() error {
	m := meta{ack: s.ack, last: s.next - 1, dropped: s.dropped, corrupt: s.corrupt}
	b := m.encode()
	f, err := os.OpenFile(s.metaTmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b[:])
	if err == nil && !s.opt.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(s.metaTmp, s.metaPath); err != nil {
		return err
	}
	return s.syncDir()
}

func (s *Spool) syncDir() error {
	if s.opt.NoSync {
		return nil
	}
	return s.dir.Sync()
}
