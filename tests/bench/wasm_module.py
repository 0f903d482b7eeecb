"""Reading a wasm module's bytes, for the scripts beside it (wasm-sections.py, wasm-crates.py)."""
import sys


def leb128(data, at):
    """The unsigned LEB128 number at `at`, and where the next field starts."""
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def read_module(path):
    """The file's bytes; exits naming the file when it is not a wasm module."""
    data = open(path, 'rb').read()
    if data[:4] != b'\0asm':
        sys.exit(f'{path}: not a wasm module (no \\0asm magic)')
    return data


def sections(data):
    """(id, body) of each section in order, a custom section's body with its name in front."""
    at = 8
    while at < len(data):
        kind = data[at]
        size, at = leb128(data, at + 1)
        yield kind, data[at:at + size]
        at += size


def custom_name(body):
    """A custom section's name, and the bytes after it."""
    length, at = leb128(body, 0)
    return body[at:at + length].decode('utf-8', 'replace'), body[at + length:]


def function_bodies(code):
    """Each function's bytes in the code section's body, in index order (after the imports)."""
    count, at = leb128(code, 0)
    bodies = []
    for _ in range(count):
        length, at = leb128(code, at)
        bodies.append(code[at:at + length])
        at += length
    return bodies
