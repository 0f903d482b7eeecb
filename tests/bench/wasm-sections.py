#!/usr/bin/env python3
"""What a wasm file's bytes are: each section's size raw and gzipped at level 9 on its own, and
for the code section its functions' count and the largest of them (docs/performance.md, "The
page's wasm").
    python3 tests/bench/wasm-sections.py DIST/vramlab-web_bg.wasm
"""
import sys
import zlib

from wasm_module import function_bodies, read_module, sections

NAMES = {0: 'custom', 1: 'type', 2: 'import', 3: 'function', 4: 'table', 5: 'memory',
         6: 'global', 7: 'export', 8: 'start', 9: 'element', 10: 'code', 11: 'data',
         12: 'data count'}


def main(path):
    data = read_module(path)
    total_raw = total_gzip = 0
    print(f'{"section":<12} {"raw MB":>8} {"gzip MB":>8}')
    for kind, body in sections(data):
        size = len(body)
        gzipped = len(zlib.compress(body, 9))
        total_raw += size
        total_gzip += gzipped
        print(f'{NAMES.get(kind, kind):<12} {size / 1e6:8.2f} {gzipped / 1e6:8.2f}')
        if kind == 10:
            sizes = sorted(map(len, function_bodies(body)), reverse=True)
            print(f'  {len(sizes):,} functions; the largest {sizes[0]:,} B; '
                  f'the 1,000 largest {sum(sizes[:1000]) / 1e6:.2f} MB raw')
    print(f'{"all":<12} {total_raw / 1e6:8.2f} {total_gzip / 1e6:8.2f} (sections gzipped one by one)')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
