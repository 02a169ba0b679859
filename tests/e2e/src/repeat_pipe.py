#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Make a large pipe-layout perf.data from a small one.

repeat_pipe.py IN OUT BYTES: copies IN's 16-byte pipe header and its
leading metadata records (HEADER_ATTR, HEADER_FEATURE, TRACING_DATA,
EVENT_UPDATE, ...: user types >= 64 before the first kernel record) once,
then appends IN's remaining records again and again until OUT holds at
least BYTES. Records are copied whole, so every copy is a valid stream
(docs/perf-data-format.md §1.5); timestamps repeat, which only
makes later copies count as out of order.
"""
import struct
import sys


def main():
    src, dst, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = open(src, "rb").read()
    if data[:8] != b"PERFILE2" or struct.unpack_from("<Q", data, 8)[0] != 16:
        sys.exit(f"{src}: not a pipe-layout perf.data")
    pos = 16
    while pos + 8 <= len(data):
        rtype, _, size = struct.unpack_from("<IHH", data, pos)
        if rtype < 64 or size < 8:
            break
        extra = 0
        if rtype == 66:  # TRACING_DATA: payload after the record
            extra = (struct.unpack_from("<I", data, pos + 8)[0] + 7) & ~7
        pos += size + extra
    head, body = data[:pos], data[pos:]
    if not body:
        sys.exit(f"{src}: no records after the metadata")
    with open(dst, "wb") as out:
        out.write(head)
        n = len(head)
        while n < want:
            out.write(body)
            n += len(body)
    print(f"{dst}: {n} bytes, {len(body)}-byte body repeated {(n - len(head)) // len(body)} times")


if __name__ == "__main__":
    main()
