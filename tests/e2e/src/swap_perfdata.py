#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Re-encode a little-endian, file-layout perf.data in big-endian byte order.

usage: swap_perfdata.py IN OUT

An independent encoder for the endianness tests (tests/e2e/run-endian.sh):
it writes what a big-endian perf would have written for the same data,
following the layouts of docs/perf-data-format.md (§1.1 header
and magic, §1.2 attrs and ids, §1.3 records, §1.4 features, §1.9 the
sample_id trailer, §2.1 sample fields, §2.4 kernel records) and
include/uapi/linux/perf_event.h. Every field is rewritten by its own
width; strings, RAW payloads, user stack dumps and the tracing data blob
(it carries its own endian byte) are byte data and stay as they are.
The attr flag bit-fields are allocated from the other end of each byte
on a big-endian machine, so each of those bytes is bit-reversed.

Feature sections that perfspy does not decode (topology, caches, ...)
are left as written; pipe layout and compressed data are refused.
"""
import struct
import sys

MAGIC = 0x32454C4946524550  # "PERFILE2" as a u64

S = {  # sample_type bits (perf_event.h)
    'IP': 1 << 0, 'TID': 1 << 1, 'TIME': 1 << 2, 'ADDR': 1 << 3,
    'READ': 1 << 4, 'CALLCHAIN': 1 << 5, 'ID': 1 << 6, 'CPU': 1 << 7,
    'PERIOD': 1 << 8, 'STREAM_ID': 1 << 9, 'RAW': 1 << 10,
    'BRANCH_STACK': 1 << 11, 'REGS_USER': 1 << 12, 'STACK_USER': 1 << 13,
    'WEIGHT': 1 << 14, 'DATA_SRC': 1 << 15, 'IDENTIFIER': 1 << 16,
    'TRANSACTION': 1 << 17, 'REGS_INTR': 1 << 18, 'PHYS_ADDR': 1 << 19,
    'AUX': 1 << 20, 'CGROUP': 1 << 21, 'DATA_PAGE_SIZE': 1 << 22,
    'CODE_PAGE_SIZE': 1 << 23, 'WEIGHT_STRUCT': 1 << 24,
}

# perf_event_attr after the bit-field word: (offset, width).
ATTR_TAIL = [(48, 4), (52, 4), (56, 8), (64, 8), (72, 8), (80, 8),
             (88, 4), (92, 4), (96, 8), (104, 4), (108, 2), (110, 2),
             (112, 4), (116, 4), (120, 8)]

FMT = {1: 'B', 2: 'H', 4: 'I', 8: 'Q'}


class Refuse(Exception):
    pass


class Enc:
    def __init__(self, data):
        self.src = bytes(data)
        self.out = bytearray(data)

    def get(self, off, w):
        return struct.unpack_from('<' + FMT[w], self.src, off)[0]

    def put(self, off, w):
        """Rewrite the field at off (w bytes) big-endian; return its value."""
        if off < 0 or off + w > len(self.src):
            raise IndexError(off)
        v = self.get(off, w)
        struct.pack_into('>' + FMT[w], self.out, off, v)
        return v


class Cur:
    """Walks the fields of one record/section, converting as it goes."""

    def __init__(self, enc, off, end):
        self.e, self.p, self.end = enc, off, end

    def f(self, w):
        if self.p + w > self.end:
            raise IndexError(self.p)
        v = self.e.put(self.p, w)
        self.p += w
        return v

    def skip(self, n):
        if self.p + n > self.end:
            raise IndexError(self.p)
        self.p += n

    def rest64(self):
        while self.p + 8 <= self.end:
            self.f(8)


def revbits(b):
    return int('{:08b}'.format(b)[::-1], 2)


class Attr:
    def __init__(self, enc, off, length):
        g = enc.get
        self.type = g(off, 4)
        self.sample_type = g(off + 24, 8)
        self.read_format = g(off + 32, 8)
        flags = g(off + 40, 8)
        self.sample_id_all = bool(flags & (1 << 18))
        self.branch_sample_type = g(off + 72, 8) if length >= 80 else 0
        self.regs_user = g(off + 80, 8) if length >= 88 else 0
        self.regs_intr = g(off + 96, 8) if length >= 104 else 0
        t = self.sample_type
        if t & S['IDENTIFIER']:
            self.id_pos, self.is_pos = 0, 1
        elif t & S['ID']:
            self.id_pos = sum(bool(t & S[k]) for k in ('IP', 'TID', 'TIME', 'ADDR'))
            self.is_pos = 1 + sum(bool(t & S[k]) for k in ('CPU', 'STREAM_ID'))
        else:
            self.id_pos = self.is_pos = -1
        bits = sum(bool(t & S[k]) for k in
                   ('TID', 'TIME', 'ID', 'STREAM_ID', 'CPU', 'IDENTIFIER'))
        self.id_hdr_size = 8 * bits if self.sample_id_all else 0


def put_attr(enc, off, length):
    """struct perf_event_attr, as far as length bytes reach."""
    enc.put(off, 4)
    enc.put(off + 4, 4)
    for o in range(8, 40, 8):
        if o + 8 <= length:
            enc.put(off + o, 8)
    if length >= 48:
        for i in range(40, 48):
            enc.out[off + i] = revbits(enc.src[off + i])
    for o, w in ATTR_TAIL:
        if o + w > length:
            break
        enc.put(off + o, w)


class File:
    def __init__(self, data):
        self.e = Enc(data)
        self.attrs = []
        self.ids = {}

    def evsel(self, off, size, typ):
        if not self.attrs:
            return None
        if len(self.attrs) == 1:
            return self.attrs[0]
        first = self.attrs[0]
        if typ == 9:
            if first.id_pos < 0:
                return first
            pos = off + 8 + 8 * first.id_pos
        else:
            if not first.sample_id_all or first.is_pos < 0:
                return first
            if first.is_pos * 8 > size - 8:
                return None
            pos = off + size - 8 * first.is_pos
        if pos + 8 > off + size:
            return None
        i = self.e.get(pos, 8)
        if i == 0:
            return first
        return self.ids.get(i)

    def header(self):
        e = self.e
        if e.get(0, 8) != MAGIC:
            raise Refuse('not a little-endian PERFILE2 file')
        hsize = e.get(8, 8)
        if hsize == 16:
            raise Refuse('pipe layout')
        for o in range(0, 72 + (32 if hsize >= 104 else 0), 8):
            e.put(o, 8)
        asz, aoff, alen = e.get(16, 8), e.get(24, 8), e.get(32, 8)
        for i in range(alen // asz):
            a = aoff + i * asz
            at = Attr(e, a, asz - 16)
            self.attrs.append(at)
            put_attr(e, a, asz - 16)
            ioff, isize = e.put(a + asz - 16, 8), e.put(a + asz - 8, 8)
            for j in range(0, isize - isize % 8, 8):
                self.ids[e.put(ioff + j, 8)] = at
        bits = [e.get(72 + 8 * i, 8) for i in range(4)] if hsize >= 104 else [0] * 4
        return e.get(40, 8), e.get(48, 8), bits

    def sample(self, c, a):
        t = a.sample_type
        for k in ('IDENTIFIER', 'IP'):
            if t & S[k]:
                c.f(8)
        if t & S['TID']:
            c.f(4), c.f(4)
        for k in ('TIME', 'ADDR', 'ID', 'STREAM_ID'):
            if t & S[k]:
                c.f(8)
        if t & S['CPU']:
            c.f(4), c.f(4)
        if t & S['PERIOD']:
            c.f(8)
        if t & S['READ']:
            rf = a.read_format
            nr = c.f(8) if rf & 8 else 1
            for bit in (1, 2):
                if rf & bit:
                    c.f(8)
            per = 1 + bool(rf & 4) + bool(rf & 16)
            for _ in range(nr * per):
                c.f(8)
        if t & S['CALLCHAIN']:
            for _ in range(c.f(8)):
                c.f(8)
        if t & S['RAW']:
            c.skip(c.f(4))
        if t & S['BRANCH_STACK']:
            nr = c.f(8)
            if a.branch_sample_type & (1 << 17):
                c.f(8)
            for _ in range(3 * nr):
                c.f(8)
        if t & S['REGS_USER'] and c.f(8):
            for _ in range(bin(a.regs_user).count('1')):
                c.f(8)
        if t & S['STACK_USER']:
            n = c.f(8)
            if n:
                c.skip(n)  # raw stack memory: bytes as they were
                c.f(8)
        for k in ('WEIGHT', 'DATA_SRC', 'TRANSACTION'):
            if t & (S[k] | (S['WEIGHT_STRUCT'] if k == 'WEIGHT' else 0)):
                c.f(8)
        if t & S['REGS_INTR'] and c.f(8):
            for _ in range(bin(a.regs_intr).count('1')):
                c.f(8)
        for k in ('PHYS_ADDR', 'CGROUP', 'DATA_PAGE_SIZE', 'CODE_PAGE_SIZE'):
            if t & S[k]:
                c.f(8)
        if t & S['AUX']:
            c.skip(c.f(8))

    def sample_id(self, a, off, size):
        if not a or not a.sample_id_all or a.id_hdr_size > size - 8:
            return 0
        c = Cur(self.e, off + size - a.id_hdr_size, off + size)
        t = a.sample_type
        if t & S['TID']:
            c.f(4), c.f(4)
        for k in ('TIME', 'ID', 'STREAM_ID'):
            if t & S[k]:
                c.f(8)
        if t & S['CPU']:
            c.f(4), c.f(4)
        if t & S['IDENTIFIER']:
            c.f(8)
        return a.id_hdr_size

    @staticmethod
    def kernel_body(c, typ, misc):
        if typ in (1, 10):  # MMAP, MMAP2
            c.f(4), c.f(4), c.f(8), c.f(8), c.f(8)
            if typ == 10:
                if misc & (1 << 14):
                    c.skip(2), c.f(2), c.skip(20)
                else:
                    c.f(4), c.f(4), c.f(8), c.f(8)
                c.f(4), c.f(4)
        elif typ in (3, 15):  # COMM, SWITCH_CPU_WIDE
            c.f(4), c.f(4)
        elif typ in (4, 7):  # EXIT, FORK
            c.f(4), c.f(4), c.f(4), c.f(4), c.f(8)
        elif typ in (2, 13, 5, 6):  # LOST, LOST_SAMPLES, (UN)THROTTLE
            c.rest64()

    def user(self, c, off, size, typ):
        e = self.e
        extra = 0
        if typ == 64:  # HEADER_ATTR
            asz = e.get(off + 12, 4) or 64
            asz = min(asz, size - 8)
            put_attr(e, off + 8, asz)
            c.skip(asz)
            c.rest64()
        elif typ in (65, 69, 79):  # EVENT_TYPE, ID_INDEX, TIME_CONV
            c.rest64()
        elif typ == 66:  # HEADER_TRACING_DATA
            extra = (c.f(4) + 7) & ~7
        elif typ == 67:  # HEADER_BUILD_ID
            c.f(4)
        elif typ == 70:  # AUXTRACE_INFO
            c.f(4), c.f(4)
            c.rest64()
        elif typ == 71:  # AUXTRACE
            extra = c.f(8)
            c.f(8), c.f(8)
            while c.p + 4 <= c.end:
                c.f(4)
        elif typ == 78:  # EVENT_UPDATE
            kind = c.f(8)
            c.f(8)
            if kind == 1:
                c.f(8)
        elif typ == 80:  # HEADER_FEATURE
            self.feature(c.f(8), c.p, c.end)
        elif typ == 81:
            raise Refuse('compressed data')
        return extra

    def records(self, off, end):
        e = self.e
        while off + 8 <= end:
            typ, misc, size = e.put(off, 4), e.put(off + 4, 2), e.put(off + 6, 2)
            if size < 8 or off + size > end:
                break
            c = Cur(e, off + 8, off + size)
            extra = 0
            if typ >= 64:
                extra = self.user(c, off, size, typ)
            elif typ == 9:
                a = self.evsel(off, size, typ)
                if a:
                    self.sample(c, a)
            elif typ:
                a = self.evsel(off, size, typ)
                tail = self.sample_id(a, off, size)
                self.kernel_body(Cur(e, off + 8, off + size - tail), typ, misc)
            off += size + extra

    def string(self, c):
        c.skip(c.f(4))

    def feature(self, bit, off, end):
        c = Cur(self.e, off, end)
        if 3 <= bit <= 6 or bit in (8, 9):  # strings
            self.string(c)
        elif bit == 7:  # NRCPUS
            c.f(4), c.f(4)
        elif bit in (10, 21):  # TOTAL_MEM, SAMPLE_TIME
            c.rest64()
        elif bit == 11:  # CMDLINE
            for _ in range(c.f(4)):
                self.string(c)
        elif bit == 12:  # EVENT_DESC
            nr, asz = c.f(4), c.f(4)
            for _ in range(nr):
                put_attr(self.e, c.p, asz)
                c.skip(asz)
                nids = c.f(4)
                self.string(c)
                for _ in range(nids):
                    c.f(8)
        elif bit == 2:  # BUILD_ID: {header; s32 pid; ...} entries
            while c.p + 8 <= c.end:
                p = c.p
                c.f(4), c.f(2)
                size = c.f(2)
                if size < 12 or p + size > c.end:
                    break
                c.f(4)
                c.p = p + size
        elif bit == 27:  # COMPRESSED: 5 u32
            while c.p + 4 <= c.end:
                c.f(4)

    def features(self, bits, off):
        for bit in range(256):
            if not bits[bit // 64] & (1 << (bit % 64)):
                continue
            foff, fsize = self.e.put(off, 8), self.e.put(off + 8, 8)
            off += 16
            self.feature(bit, foff, foff + fsize)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[2])
    with open(sys.argv[1], 'rb') as fh:
        f = File(fh.read())
    try:
        doff, dsize, bits = f.header()
        end = doff + dsize if dsize else len(f.e.src)
        f.records(doff, min(end, len(f.e.src)))
        if dsize and doff + dsize <= len(f.e.src):
            f.features(bits, doff + dsize)
    except Refuse as ex:
        sys.exit('swap_perfdata: %s: %s' % (sys.argv[1], ex))
    with open(sys.argv[2], 'wb') as fh:
        fh.write(f.e.out)


if __name__ == '__main__':
    main()
