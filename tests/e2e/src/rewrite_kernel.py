#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Make a perf.data look recorded on another kernel (tests/e2e/run-foreign.sh).

usage: rewrite_kernel.py IN OUT [--build-id HEX | --drop-build-id]
                                [--os-release STRING]

--build-id HEX      the BUILD_ID feature's [kernel.kallsyms] entry gets this
                    id (40 hex digits)
--drop-build-id     that entry is renamed (its file name no longer names the
                    kernel), as if perf had recorded no kernel build id
--os-release S      HEADER_OSRELEASE becomes S (it must fit the recorded
                    string's padded length)

A stream (pipe layout: a 16-byte header, then records) gets --os-release
only: its HEADER_FEATURE record (type 80: header, u64 feature id, then the
feature's data as in a file) for OSRELEASE is rewritten.

Layouts: docs/perf-data-format.md §1.1 (header: attrs, data,
event_types sections, then the 256-bit feature bitmap at byte 72) and §1.4
(feature index after the data section, one {offset, size} per set bit in
bit order; BUILD_ID = bit 2, entries {header, pid, build_id[24], filename};
OSRELEASE = bit 4, a u32 length then the NUL-padded string). Everything is
rewritten in place: sizes and offsets do not move.
"""
import struct
import sys

FEAT_BUILD_ID = 2
FEAT_OSRELEASE = 4


def features(buf):
    magic, = struct.unpack_from('<Q', buf, 0)
    if magic != 0x32454C4946524550:
        sys.exit('not a little-endian perf.data file')
    data_off, data_size = struct.unpack_from('<QQ', buf, 40)
    bits = struct.unpack_from('<4Q', buf, 72)
    idx = data_off + data_size
    out = {}
    for bit in range(256):
        if bits[bit // 64] >> (bit % 64) & 1:
            off, size = struct.unpack_from('<QQ', buf, idx)
            out[bit] = (off, size)
            idx += 16
    return out


def pipe_osrelease(buf):
    off = 16
    while off + 8 <= len(buf):
        typ, size = struct.unpack_from('<IxxH', buf, off)
        if size < 8:
            break
        if typ == 80 and struct.unpack_from('<Q', buf, off + 8)[0] == FEAT_OSRELEASE:
            return off + 16
        off += size
    sys.exit('no OSRELEASE feature record in the stream')


def kernel_entry(buf, off, size):
    end = off + size
    while off + 36 <= end:
        esize, = struct.unpack_from('<H', buf, off + 6)
        if esize < 36:
            break
        name = bytes(buf[off + 36:off + esize]).split(b'\0')[0]
        if name == b'[kernel.kallsyms]':
            return off
        off += esize
    sys.exit('no [kernel.kallsyms] build id in the file')


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    src, dst, opts = args[0], args[1], args[2:]
    buf = bytearray(open(src, 'rb').read())
    pipe = struct.unpack_from('<Q', buf, 8)[0] == 16
    feats = {} if pipe else features(buf)
    if pipe:
        feats[FEAT_OSRELEASE] = (pipe_osrelease(buf), 0)
    i = 0
    while i < len(opts):
        opt = opts[i]
        if opt in ('--build-id', '--drop-build-id'):
            if FEAT_BUILD_ID not in feats:
                sys.exit('no BUILD_ID feature')
            ent = kernel_entry(buf, *feats[FEAT_BUILD_ID])
            if opt == '--build-id':
                bid = bytes.fromhex(opts[i + 1])
                buf[ent + 12:ent + 12 + len(bid)] = bid
                i += 1
            else:
                buf[ent + 36:ent + 36 + 17] = b'[kernel.kallsymX]'
        elif opt == '--os-release':
            if FEAT_OSRELEASE not in feats:
                sys.exit('no OSRELEASE feature')
            off, _ = feats[FEAT_OSRELEASE]
            n, = struct.unpack_from('<I', buf, off)
            s = opts[i + 1].encode()
            if len(s) >= n:
                sys.exit('--os-release: longer than the recorded string')
            buf[off + 4:off + 4 + n] = s + b'\0' * (n - len(s))
            i += 1
        else:
            sys.exit('unknown option ' + opt)
        i += 1
    open(dst, 'wb').write(buf)


main()
