package spool

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The meta file: magic, then little-endian uint64 ack, last, dropped, corrupt, (version 2 only)
// flags, then the CRC-32C of all that. Version 1 is written while no flag is set, so that an
// older agent (which knows only version 1) still reads the meta of one that never set a flag.
const (
	metaName   = "meta"
	metaTmp    = "meta.tmp"
	metaMagic  = "EWSPOOL1"
	metaMagic2 = "EWSPOOL2"
	metaBytes  = len(metaMagic) + 4*8 + 4
	metaBytes2 = metaBytes + 8
)

// meta is what the spool persists beside the segments.
type meta struct {
	ack     uint64 // every record with ID <= ack was delivered (or dropped)
	last    uint64 // the last ID assigned when the meta was written
	dropped uint64 // records dropped by the cap, ever
	corrupt uint64 // corrupt regions skipped, ever
	flags   uint64 // the user's (SetFlags)
}

// encode returns the meta file's bytes: version 1 while no flag is set, else version 2.
func (m meta) encode() []byte {
	magic, vals := metaMagic, []uint64{m.ack, m.last, m.dropped, m.corrupt}
	if m.flags != 0 {
		magic, vals = metaMagic2, append(vals, m.flags)
	}
	b := make([]byte, len(magic)+8*len(vals)+4)
	copy(b, magic)
	o := len(magic)
	for _, v := range vals {
		binary.LittleEndian.PutUint64(b[o:], v)
		o += 8
	}
	binary.LittleEndian.PutUint32(b[o:], crc32.Checksum(b[:o], castagnoli))
	return b
}

var errBadMeta = errors.New("bad meta file")

func decodeMeta(b []byte) (meta, error) {
	o := len(metaMagic)
	n := metaBytes
	if len(b) >= o && string(b[:o]) == metaMagic2 {
		n = metaBytes2
	} else if len(b) < o || string(b[:o]) != metaMagic {
		return meta{}, errBadMeta
	}
	if len(b) != n || binary.LittleEndian.Uint32(b[n-4:]) != crc32.Checksum(b[:n-4], castagnoli) {
		return meta{}, errBadMeta
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[o+8*i:]) }
	m := meta{ack: u(0), last: u(1), dropped: u(2), corrupt: u(3)}
	if n == metaBytes2 {
		m.flags = u(4)
	}
	return m, nil
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
	m := meta{ack: s.ack, last: s.next - 1, dropped: s.dropped, corrupt: s.corrupt, flags: s.flags}
	b := m.encode()
	f, err := os.OpenFile(s.metaTmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
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
