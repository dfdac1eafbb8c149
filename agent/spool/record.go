package spool

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxRecordBytes is the largest payload Append accepts.
const MaxRecordBytes = 1 << 20

// headerBytes is the size of a record's frame header: length, CRC-32C, ID.
const headerBytes = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends the framed record (header then payload) to dst.
func appendFrame(dst []byte, id uint64, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, id)
	dst = append(dst, payload...)
	f := dst[start:]
	binary.LittleEndian.PutUint32(f[4:8], frameCRC(f))
	return dst
}

// frameCRC is the CRC-32C of a whole frame's length, ID and payload (the CRC field excluded),
// so that a damaged length is caught as surely as a damaged payload.
func frameCRC(frame []byte) uint32 {
	return crc32.Update(crc32.Checksum(frame[0:4], castagnoli), castagnoli, frame[8:])
}

// header decodes a frame header.
func header(h []byte) (plen int, sum uint32, id uint64) {
	return int(binary.LittleEndian.Uint32(h[0:4])), binary.LittleEndian.Uint32(h[4:8]), binary.LittleEndian.Uint64(h[8:16])
}

// segmentName is the file name of the segment whose first record has ID first.
func segmentName(first uint64) string {
	return fmt.Sprintf("%020d.seg", first)
}

// parseSegmentName returns the first ID of a segment file name; ok is false for other files.
func parseSegmentName(name string) (first uint64, ok bool) {
	digits, found := strings.CutSuffix(name, ".seg")
	if !found || len(digits) != 20 || filepath.Base(name) != name {
		return 0, false
	}
	first, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || first == 0 {
		return 0, false
	}
	return first, true
}

// damage says how a segment's valid records end.
type damage int

const (
	intact  damage = iota // every byte belongs to a valid record
	torn                  // an unfinished last write: a short frame or zeros up to the end of the file
	corrupt               // a bad frame with data after it
)

// scanResult describes the valid prefix of a segment.
type scanResult struct {
	size   int64  // bytes in the file
	end    int64  // offset just after the last valid record
	n      int    // valid records
	last   uint64 // ID of the last valid record, 0 if none
	ackEnd int64  // offset just after the last valid record with ID <= the ack ID
	ackN   int    // valid records with ID <= the ack ID
	damage damage
}

// scanSegment reads a segment of size bytes from r and validates its frames: length, CRC,
// and IDs strictly increasing within [first, limit). It stops at the first bad frame. buf is
// scratch space, returned grown for reuse.
func scanSegment(r io.Reader, size int64, first, limit, ack uint64, buf []byte) (scanResult, []byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	res := scanResult{size: size}
	prev := first - 1
	var h [headerBytes]byte
	for res.end < size {
		rest := size - res.end
		if rest < headerBytes {
			res.damage = torn
			return res, buf, nil
		}
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return res, buf, err
		}
		plen, sum, id := header(h[:])
		if plen > MaxRecordBytes || int64(headerBytes+plen) > rest {
			res.damage = tail(h[:], br, plen <= MaxRecordBytes)
			return res, buf, nil
		}
		buf = append(append(buf[:0], h[:]...), make([]byte, plen)...)
		if _, err := io.ReadFull(br, buf[headerBytes:]); err != nil {
			return res, buf, err
		}
		if sum != frameCRC(buf) || id <= prev || id >= limit {
			// A bad last frame is an unfinished write: the length made it to disk, not all the payload.
			if int64(headerBytes+plen) == rest {
				res.damage = torn
			} else {
				res.damage = tail(buf, br, false)
			}
			return res, buf, nil
		}
		prev = id
		res.end += int64(headerBytes + plen)
		res.n++
		res.last = id
		if id <= ack {
			res.ackEnd, res.ackN = res.end, res.n
		}
	}
	return res, buf, nil
}

// tail classifies the bytes from a bad frame (already read into b, the rest in r) to the end of
// the file: torn if shortTorn or if they are all zeros (a file extended but never written),
// corrupt otherwise.
func tail(b []byte, r io.Reader, shortTorn bool) damage {
	if shortTorn {
		return torn
	}
	zero := func(p []byte) bool {
		for _, c := range p {
			if c != 0 {
				return false
			}
		}
		return true
	}
	if !zero(b) {
		return corrupt
	}
	var chunk [4096]byte
	for {
		n, err := r.Read(chunk[:])
		if !zero(chunk[:n]) {
			return corrupt
		}
		if err != nil {
			return torn
		}
	}
}
