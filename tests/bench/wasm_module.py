"""Reading a wasm module's bytes, for the scripts beside it (wasm-sections.py, wasm-crates.py)."""


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
