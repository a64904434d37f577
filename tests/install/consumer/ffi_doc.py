"""Runs a Python example of docs/ffi.md exactly as written (the first
```python block of the given section), then checks the x it reduced: each
rank's arange(4) + rank, summed over N ranks.

    ffi_doc.py docs/ffi.md "## ctypes" N
"""
import sys

import numpy as np

doc, section, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(doc) as f:
    text = f.read()
start = text.index("\n" + section + "\n")
start = text.index("```python\n", start) + len("```python\n")
code = text[start:text.index("```", start)]
namespace = {"__name__": "__main__"}
exec(compile(code, "%s (%s)" % (doc, section), "exec"), namespace)
x = namespace["x"]
want = np.arange(4, dtype=np.float32) * n + n * (n - 1) / 2
assert (x == want).all(), "%s: x = %s, want %s" % (section, x, want)
print("%s example of %s: x = %s" % (section, doc, x.tolist()))
