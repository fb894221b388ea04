#!/usr/bin/env python3
"""Prints the platform a Go binary is built for, as GOOS/GOARCH: linux
(ELF), darwin (Mach-O 64) or windows (PE), on amd64 or arm64; "unknown"
otherwise. make test-dist checks each plugin archive's binary with it.

Usage: hack/binformat.py FILE
"""
import struct
import sys

ELF = {0x3E: "amd64", 0xB7: "arm64"}      # e_machine
MACHO = {0x01000007: "amd64", 0x0100000C: "arm64"}  # cputype
PE = {0x8664: "amd64", 0xAA64: "arm64"}   # COFF Machine


def platform(data: bytes) -> str:
    if data[:4] == b"\x7fELF":
        return "linux/" + ELF.get(struct.unpack_from("<H", data, 18)[0], "unknown")
    if data[:4] == b"\xcf\xfa\xed\xfe":
        return "darwin/" + MACHO.get(struct.unpack_from("<I", data, 4)[0], "unknown")
    if data[:2] == b"MZ":
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if data[pe:pe + 4] == b"PE\0\0":
            return "windows/" + PE.get(struct.unpack_from("<H", data, pe + 4)[0], "unknown")
    return "unknown"


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        print(platform(f.read(4096)))
