#!/usr/bin/env python3
"""What each crate's code costs in a wasm file that kept its function names (docs/performance.md,
"The page's wasm"): the code section's bytes grouped by the crate each function's name starts
with (the self type's crate for a trait method `<Type as Trait>::f`, the trait's for a blanket
`<T as Trait>::f`), raw and gzipped at level 9 group by group.

The served page strips its names, so build one that keeps them first: `cargo rustc` passes the
flag to the page crate alone, which is all that rebuilds (its link too; the dependencies are the
page profile's own), and wasm-bindgen then drops what the page never calls, as for the served file:
    cargo rustc --profile page --locked --target wasm32-unknown-unknown -p vramlab-web --lib \
        -- -C strip=none
    wasm-bindgen --target web --no-typescript --out-dir /tmp/wb-names --out-name vramlab-web \
        $CARGO_TARGET_DIR/wasm32-unknown-unknown/page/vramlab_web.wasm
    python3 tests/bench/wasm-crates.py /tmp/wb-names/vramlab-web_bg.wasm [TOP]
A plain `cargo build --profile page` afterwards puts the served, stripped build back.
"""
import re
import sys
import zlib
from collections import defaultdict

from wasm_module import custom_name, function_bodies, leb128, read_module, sections


def imported_functions(body):
    """How many functions the import section brings: they come first in the function index space."""
    count, at = leb128(body, 0)
    functions = 0
    for _ in range(count):
        for _ in range(2):  # module and field names
            length, at = leb128(body, at)
            at += length
        kind = body[at]
        at += 1
        if kind == 0:  # function: a type index
            _, at = leb128(body, at)
            functions += 1
        elif kind == 1:  # table: reftype, limits
            at += 1
            flags, at = leb128(body, at)
            _, at = leb128(body, at)
            if flags & 1:
                _, at = leb128(body, at)
        elif kind == 2:  # memory: limits
            flags, at = leb128(body, at)
            _, at = leb128(body, at)
            if flags & 1:
                _, at = leb128(body, at)
        elif kind == 3:  # global: valtype, mutability
            at += 2
        else:
            sys.exit(f'import kind {kind} not understood')
    return functions


def function_names(body):
    """Function index -> name, from the name section's function-names subsection."""
    names = {}
    at = 0
    while at < len(body):
        sub = body[at]
        size, at = leb128(body, at + 1)
        if sub == 1:
            inner = at
            count, inner = leb128(body, inner)
            for _ in range(count):
                index, inner = leb128(body, inner)
                length, inner = leb128(body, inner)
                names[index] = body[inner:inner + length].decode('utf-8', 'replace')
                inner += length
        at += size
    return names


ESCAPES = {'$LT$': '<', '$GT$': '>', '$u20$': ' ', '$C$': ',', '$RF$': '&', '$BP$': '*',
           '$u27$': "'", '$u5b$': '[', '$u5d$': ']', '$u7b$': '{', '$u7d$': '}', '$u3b$': ';',
           '$u7e$': '~', '$u21$': '!', '$u22$': '"', '$u2b$': '+', '$SP$': '@'}


def demangle(name):
    """A legacy Rust symbol (`_ZN...E`) as a path; other names as they are."""
    if name.startswith('_ZN') and name.endswith('E'):
        parts, at = [], 3
        while at < len(name) - 1 and name[at].isdigit():
            digits = re.match(r'\d+', name[at:]).group()
            at += len(digits)
            parts.append(name[at:at + int(digits)])
            at += int(digits)
        if parts and re.fullmatch(r'h[0-9a-f]{16}', parts[-1]):
            parts.pop()
        name = '::'.join(parts)
    for escape, text in ESCAPES.items():
        name = name.replace(escape, text)
    name = name.replace('..', '::')
    return re.sub(r'::h[0-9a-f]{16}$', '', name)


def crate_of(name):
    """The crate a demangled path names first: for `<Type as Trait>::f` the self type's, or the
    trait's when the self type is a bare generic parameter (`<T as Trait>`, a blanket impl);
    for a v0 symbol (`_R...`, Rust's own precompiled std) the first crate it names."""
    if name.startswith('_R'):
        crate = re.search(r'C(?:s[0-9A-Za-z]*_)?(\d+)([A-Za-z_])', name)
        if crate:
            start = crate.start(2)
            return name[start:start + int(crate.group(1))]
        return '(unnamed)'
    path = name.lstrip('_<&*[( ')
    path = re.sub(r'^(mut |dyn |const )+', '', path)
    blanket = re.match(r'[A-Z][A-Za-z0-9]* as ([A-Za-z0-9_]+)::', path)
    if blanket:
        return blanket.group(1)
    head = re.match(r'[A-Za-z0-9_]+', path)
    if not head or '::' not in path:
        return '(unnamed)'
    return head.group()


def row(label, bodies, total):
    """One line of the table: a group's functions, raw and gzipped bytes, and raw share."""
    raw = sum(map(len, bodies))
    gzipped = len(zlib.compress(b''.join(bodies), 9))
    return f'{label:<24} {len(bodies):>9,} {raw / 1e6:8.2f} {gzipped / 1e6:8.2f} {raw / total:9.1%}'


def main(path, top):
    data = read_module(path)
    imports, code, names = 0, None, {}
    for kind, body in sections(data):
        if kind == 2:
            imports = imported_functions(body)
        elif kind == 10:
            code = body
        elif kind == 0:
            custom, rest = custom_name(body)
            if custom == 'name':
                names = function_names(rest)
    if code is None:
        sys.exit(f'{path}: no code section')
    bodies = function_bodies(code)
    # A stripped build keeps a few names (wasm-bindgen's own shims): too few to group by.
    if sum(imports <= index < imports + len(bodies) for index in names) < len(bodies) / 2:
        sys.exit(f'{path}: most functions have no name (build it with -C strip=none, as this '
                 'script\'s help says)')
    by_crate = defaultdict(list)
    for index, body in enumerate(bodies):
        name = demangle(names.get(imports + index, '(no name)'))
        by_crate[crate_of(name)].append(body)
    total = len(code)
    total_gzip = len(zlib.compress(code, 9))
    print(f'code section: {len(bodies):,} functions, {total / 1e6:.2f} MB raw, {total_gzip / 1e6:.2f} MB gzip')
    rows = sorted(by_crate.items(), key=lambda item: -sum(map(len, item[1])))
    print(f'\n{"crate":<24} {"functions":>9} {"raw MB":>8} {"gzip MB":>8} {"raw share":>9}')
    for crate, bodies in rows[:top]:
        print(row(crate, bodies, total))
    if len(rows) > top:
        rest = [body for _, bodies in rows[top:] for body in bodies]
        print(row(f'the other {len(rows) - top}', rest, total))
    # Each group is gzipped on its own, so the groups' gzip figures add up to more than the
    # section's: a group's repeats of another's bytes are not shared.
    print(f'(each crate gzipped on its own; the groups sum to more than {total_gzip / 1e6:.2f} MB)')


if __name__ == '__main__':
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 30)
