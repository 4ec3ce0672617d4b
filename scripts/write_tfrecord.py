#!/usr/bin/python3
"""Writes a TFRecord file of tf.train.Example records without TensorFlow or protobuf: its own
CRC-32C and its own protobuf encoding, so that weft's reader is checked against an independent
writer (weft/data/readers/records_test.cc).

  write_tfrecord.py OUT_FILE N

Example i has features "label" (int64 [i]), "pixels" (float [i / 2 + k for k < 4]), "name"
(bytes b"ex<i>") and "tags" (int64 [10 i + j for j < i % 3]; absent when empty).
"""
import struct
import sys


def crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    n &= (1 << 64) - 1  # int64 negatives as ten bytes
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire_type, payload):
    key = varint((number << 3) | wire_type)
    if wire_type == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def feature(kind, values):
    if kind == "int64":  # Feature.int64_list (3) of Int64List, packed field 1
        body = field(1, 2, b"".join(varint(v) for v in values))
        return field(3, 2, body)
    if kind == "float":  # Feature.float_list (2), packed little-endian floats
        body = field(1, 2, b"".join(struct.pack("<f", v) for v in values))
        return field(2, 2, body)
    body = b"".join(field(1, 2, v) for v in values)  # Feature.bytes_list (1)
    return field(1, 2, body)


def example(i):
    features = {"label": feature("int64", [i]),
                "pixels": feature("float", [i / 2 + k for k in range(4)]),
                "name": feature("bytes", [b"ex%d" % i])}
    if i % 3:
        features["tags"] = feature("int64", [10 * i + j for j in range(i % 3)])
    entries = b""
    for key, value in features.items():  # map<string, Feature>: entries of key 1, value 2
        entries += field(1, 2, field(1, 2, key.encode()) + field(2, 2, value))
    return field(1, 2, entries)  # Example.features


def frame(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(crc32c(length))) + data + \
        struct.pack("<I", masked(crc32c(data)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], "wb") as f:
        for i in range(int(sys.argv[2])):
            f.write(frame(example(i)))


if __name__ == "__main__":
    main()
