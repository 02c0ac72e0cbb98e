"""Reading a Chrome/Kineto trace's JSON without building a Python object per event (run in the
profile-analysis worker only: it imports numba, which the server process never loads).

A real torch.profiler trace (with_stack, record_shapes) is some 330 MB of JSON per million
events; ``json.load`` builds two dicts per event out of it (8.5 s for 900k events on a quiet
2-core machine), orjson as many (4 s, 2.3 GB). This module walks the bytes once, a buffer at a
time (so a file is never held whole), with a validating JSON automaton compiled by numba
(cached on disk), and keeps only what the analysis reads: for every complete event its ts,
dur, name, cat, pid, tid, args.correlation and args['Input Dims'], with names, categories,
thread ids and shapes interned (each distinct one stored once), and its args object, minified,
for the hover. B/E events are kept whole (few, paired in Python), the top-level keys other
than traceEvents too (the metadata), and a number past the fast exact conversion as its text
(Python converts it).

Whatever it does not expect (a name that is not a string, args that are not an object, a key
spelled with an escape) or cannot read (invalid JSON, a file cut short) stops the scan with a
reason, and the caller reads the file with orjson instead, which reads every valid trace and
says why an invalid one is not. Every index is bounds-checked by hand: numba does not check
them.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

if sys.byteorder != "little":  # _load8 reads words as they lie in memory; _key and _word say little-endian
    raise ImportError("the trace scanner reads words little-endian: orjson reads traces on this machine")

# Interned-string namespaces.
NS_NAME, NS_CAT, NS_PID, NS_TID, NS_DIMS, NS_COUNT = 0, 1, 2, 3, 4, 5

# Scanner results.
R_DONE = 0  # the document is complete
R_MORE = 1  # the buffer ends inside a unit: give the bytes from state[S_POS] on, and more
R_GROW = 2  # an output table is full
R_BAD = 3  # invalid JSON or a shape this reader does not take: read it with orjson

# Counters, in one array so that a scan can stop (more input, a table to grow) and resume.
(S_POS, S_MODE, S_EV, S_ARGS, S_STORE, S_ENT, S_BE, S_BESTORE, S_META, S_SLOW, S_SKIPPED, S_WHY) = range(12)
N_STATE = 12

# Where the automaton is, between units (a top-level key and value, or one event).
M_START, M_TOP_KEY, M_TOP_NEXT, M_EVENTS, M_EVENTS_NEXT, M_END, M_TOP_FIRST, M_EVENTS_FIRST = range(8)

WHY = {
    1: "invalid JSON",
    2: "a value of a shape this reader does not take",
    3: "nesting deeper than this reader follows",
    4: "the file ends before the JSON does",
    5: "no traceEvents list",
}

MAX_DEPTH = 256
# The automaton's helpers are handed the buffers and tables and allocate nothing, so they are
# compiled without numba's runtime reference counting. With it, every call that passes arrays
# increments and decrements each array's count with an atomic instruction on the way in and out
# (numba's refcount pruning cannot remove them across the scanner's branches: numba/numba#2350),
# a pair per array per call and several calls per event: 45% of the samples of a 1M-event scan
# on the Intel Xeon of bench/RESULTS.md (issue 27), where an atomic is dear. `scan` allocates its
# scratch arrays, so it keeps the runtime.
_no_refcounts = numba.njit(cache=True, _nrt=False)


@intrinsic
def _load8(typingctx, a, i):
    """The 8 bytes a[i:i+8] as one little-endian uint64, in one unaligned load (the caller
    checks i + 8 <= len(a): nothing is checked here). Reading a word at a time is what makes
    the string, hash and copy loops below cheap: a byte loop pays a compare and a branch per
    byte, and a mispredicted exit at every string's end."""
    if not (isinstance(a, types.Array) and a.dtype == types.uint8 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        at = builder.gep(data, [context.cast(builder, args[1], sig.args[1], types.intp)])
        return builder.load(builder.bitcast(at, ir.IntType(64).as_pointer()), align=1)

    return types.uint64(a, i), codegen


@intrinsic
def _store8(typingctx, a, i, w):
    """a[i:i+8] = the uint64 w's 8 bytes (little-endian), one unaligned store; unchecked."""
    if not (isinstance(a, types.Array) and a.dtype == types.uint8 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        at = builder.gep(data, [context.cast(builder, args[1], sig.args[1], types.intp)])
        value = context.cast(builder, args[2], sig.args[2], types.uint64)
        builder.store(value, builder.bitcast(at, ir.IntType(64).as_pointer()), align=1)
        return context.get_dummy_value()

    return types.none(a, i, w), codegen


ONES = np.uint64(0x0101010101010101)
HIGHS = np.uint64(0x8080808080808080)
QUOTES = np.uint64(0x2222222222222222)
BACKSLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)
SPACES = np.uint64(0x2020202020202020)


@_no_refcounts
def _word(b, p, k):
    """b[p:p+k] (k from 1 to 8) as a little-endian uint64, the bytes past k zero."""
    if p + 8 <= b.shape[0]:
        w = _load8(b, p)
        if k < 8:
            w &= (np.uint64(1) << np.uint64(8 * k)) - np.uint64(1)
        return w
    w = np.uint64(0)
    for j in range(k):
        w |= np.uint64(b[p + j]) << np.uint64(8 * j)
    return w


def _key(text: bytes) -> np.uint64:
    """A key of up to 8 bytes as _word reads it: an event's keys are told apart by one compare
    each. Zero bytes pad it, and a JSON string holds no raw zero byte, so no longer or shorter
    key reads as the same number."""
    return np.uint64(int.from_bytes(text, "little"))


K_PH, K_TS, K_DUR, K_NAME, K_CAT = _key(b"ph"), _key(b"ts"), _key(b"dur"), _key(b"name"), _key(b"cat")
K_PID, K_TID, K_ARGS = _key(b"pid"), _key(b"tid"), _key(b"args")


@_no_refcounts
def _special(w):
    """The high bit of each byte of w that a string's fast path stops at ('"', '\\', a control
    character, a byte past ASCII): the lowest one marks the first such byte exactly (the
    borrows of the subtractions only mark bytes above a marked one)."""
    q = w ^ QUOTES
    s = w ^ BACKSLASHES
    return (((q - ONES) & ~q) | ((s - ONES) & ~s) | ((w - SPACES) & ~w) | w) & HIGHS


POW10 = np.array([10.0**k for k in range(23)])
PYTHON_FUNCTION = (112, 121, 116, 104, 111, 110, 95, 102, 117, 110, 99, 116, 105, 111, 110)
INCOMPLETE = -1
INVALID = -2


@_no_refcounts
def _ws(c):
    return c == 32 or c == 10 or c == 13 or c == 9


@_no_refcounts
def _skip_ws(b, p, n):
    while p < n and _ws(b[p]):
        p += 1
    return p


@_no_refcounts
def _string_end(b, p, n):
    """b[p] is '"': the position after the closing quote, INCOMPLETE or INVALID (control
    character, bad escape, bad UTF-8)."""
    p += 1
    while p + 8 <= n:  # a word at a time up to the first byte that needs a look
        m = _special(_load8(b, p))
        if m != 0:
            p += trailing_zeros(m) >> 3
            break
        p += 8
    while p < n:
        c = b[p]
        if c > 34 and c != 92 and c < 128:  # the common byte: nothing to check
            p += 1
            continue
        if c == 34:
            return p + 1
        if c == 92:
            if p + 1 >= n:
                return INCOMPLETE
            e = b[p + 1]
            if e == 117:
                if p + 6 > n:
                    return INCOMPLETE
                for k in range(2, 6):
                    h = b[p + k]
                    if not ((48 <= h <= 57) or (65 <= h <= 70) or (97 <= h <= 102)):
                        return INVALID
                p += 6
            elif e == 34 or e == 92 or e == 47 or e == 98 or e == 102 or e == 110 or e == 114 or e == 116:
                p += 2
            else:
                return INVALID
        elif c < 32:
            return INVALID
        elif c < 128:
            p += 1
        else:
            if c >= 0xF0 and c <= 0xF4:
                k = 4
            elif c >= 0xE0:
                k = 3 if c <= 0xEF else 0
            elif c >= 0xC2:
                k = 2
            else:
                k = 0
            if k == 0:
                return INVALID
            if p + k > n:
                return INCOMPLETE
            for j in range(1, k):
                if b[p + j] & 0xC0 != 0x80:
                    return INVALID
            # overlong 3- and 4-byte forms, surrogates and code points past U+10FFFF
            if c == 0xE0 and b[p + 1] < 0xA0:
                return INVALID
            if c == 0xED and b[p + 1] >= 0xA0:
                return INVALID
            if c == 0xF0 and b[p + 1] < 0x90:
                return INVALID
            if c == 0xF4 and b[p + 1] >= 0x90:
                return INVALID
            p += k
    return INCOMPLETE


@_no_refcounts
def _number(b, p, n, out):
    """A JSON number at b[p]: its end, or INCOMPLETE / INVALID. out[0] = the value where the
    fast exact conversion holds (a mantissa under 2**53 and a power of ten up to 1e22: one
    correctly rounded operation), out[1] = 1 then, 0 where Python must convert it; out[2] = 1
    for an integer (no fraction, no exponent)."""
    start = p
    neg = False
    if b[p] == 45:
        neg = True
        p += 1
        if p >= n:
            return INCOMPLETE
    mant = np.int64(0)
    digits = 0
    c = b[p]
    if c == 48:
        p += 1
    elif 49 <= c <= 57:
        while p < n and 48 <= b[p] <= 57:
            if digits < 18:
                mant = mant * 10 + (b[p] - 48)
            digits += 1
            p += 1
    else:
        return INVALID
    frac = 0
    integer = True
    if p < n and b[p] == 46:
        integer = False
        p += 1
        if p >= n:
            return INCOMPLETE
        if not (48 <= b[p] <= 57):
            return INVALID
        while p < n and 48 <= b[p] <= 57:
            if digits < 18:
                mant = mant * 10 + (b[p] - 48)
                frac += 1
            digits += 1
            p += 1
    exp = 0
    if p < n and (b[p] == 101 or b[p] == 69):
        integer = False
        p += 1
        if p >= n:
            return INCOMPLETE
        eneg = False
        if b[p] == 43 or b[p] == 45:
            eneg = b[p] == 45
            p += 1
            if p >= n:
                return INCOMPLETE
        if not (48 <= b[p] <= 57):
            return INVALID
        while p < n and 48 <= b[p] <= 57:
            if exp < 10000:
                exp = exp * 10 + (b[p] - 48)
            p += 1
        if eneg:
            exp = -exp
    if p >= n:
        return INCOMPLETE  # a number is only known to have ended at the byte after it
    e10 = exp - frac
    out[2] = 1.0 if integer else 0.0
    if digits <= 18 and mant < (np.int64(1) << 53) and -22 <= e10 <= 22:
        # the powers of ten up to 1e22 are exact doubles: a table gives what pow() gives
        if e10 == 0:
            v = np.float64(mant)
        elif e10 > 0:
            v = np.float64(mant) * POW10[e10]
        else:
            v = np.float64(mant) / POW10[-e10]
        out[0] = -v if neg else v
        out[1] = 1.0
    else:
        out[0] = 0.0
        out[1] = 0.0
    if p - start > 0:
        return p
    return INVALID


@_no_refcounts
def _number_end(b, p, n):
    """_number's end (or INCOMPLETE / INVALID) without its value: the same checks, for the
    numbers whose value nothing reads (inside args, the metadata, pid and tid)."""
    if b[p] == 45:
        p += 1
        if p >= n:
            return INCOMPLETE
    c = b[p]
    if c == 48:
        p += 1
    elif 49 <= c <= 57:
        while p < n and 48 <= b[p] <= 57:
            p += 1
    else:
        return INVALID
    if p < n and b[p] == 46:
        p += 1
        if p >= n:
            return INCOMPLETE
        if not (48 <= b[p] <= 57):
            return INVALID
        while p < n and 48 <= b[p] <= 57:
            p += 1
    if p < n and (b[p] == 101 or b[p] == 69):
        p += 1
        if p >= n:
            return INCOMPLETE
        if b[p] == 43 or b[p] == 45:
            p += 1
            if p >= n:
                return INCOMPLETE
        if not (48 <= b[p] <= 57):
            return INVALID
        while p < n and 48 <= b[p] <= 57:
            p += 1
    if p >= n:
        return INCOMPLETE  # a number is only known to have ended at the byte after it
    return p


@_no_refcounts
def _literal(b, p, n):
    """true, false or null at b[p]."""
    c = b[p]
    k = 4 if c != 102 else 5
    if p + k > n:
        return INCOMPLETE
    ok = False
    if c == 116:
        ok = b[p + 1] == 114 and b[p + 2] == 117 and b[p + 3] == 101
    elif c == 110:
        ok = b[p + 1] == 117 and b[p + 2] == 108 and b[p + 3] == 108
    else:
        ok = b[p + 1] == 97 and b[p + 2] == 108 and b[p + 3] == 115 and b[p + 4] == 101
    return p + k if ok else INVALID


@_no_refcounts
def _value_end(b, p, n, scratch, stack):
    """Any JSON value at b[p] (whitespace skipped before it is the caller's): its end, with
    full validation; INCOMPLETE or INVALID. Containers are followed with an explicit stack."""
    c = b[p]
    if c == 34:
        return _string_end(b, p, n)
    if c == 45 or 48 <= c <= 57:
        return _number_end(b, p, n)
    if c == 116 or c == 102 or c == 110:
        return _literal(b, p, n)
    if c != 123 and c != 91:
        return INVALID
    depth = 0
    # per level: 0 = object expecting key or '}', 1 = object expecting ',' or '}',
    # 2 = array expecting value or ']', 3 = array expecting ',' or ']'
    stack[0] = 0 if c == 123 else 2
    depth = 1
    p += 1
    while True:
        p = _skip_ws(b, p, n)
        if p >= n:
            return INCOMPLETE
        c = b[p]
        s = stack[depth - 1]
        if s == 0 or s == 2:
            if (s == 0 and c == 125) or (s == 2 and c == 93):
                depth -= 1
                p += 1
                if depth == 0:
                    return p
                continue
            if s == 0:
                if c != 34:
                    return INVALID
                p = _string_end(b, p, n)
                if p < 0:
                    return p
                p = _skip_ws(b, p, n)
                if p >= n:
                    return INCOMPLETE
                if b[p] != 58:
                    return INVALID
                p = _skip_ws(b, p + 1, n)
                if p >= n:
                    return INCOMPLETE
                c = b[p]
            stack[depth - 1] = s + 1
            if c == 123 or c == 91:
                if depth >= stack.shape[0]:
                    return INVALID
                stack[depth] = 0 if c == 123 else 2
                depth += 1
                p += 1
                continue
            if c == 34:
                p = _string_end(b, p, n)
            elif c == 45 or 48 <= c <= 57:
                p = _number_end(b, p, n)
            elif c == 116 or c == 102 or c == 110:
                p = _literal(b, p, n)
            else:
                return INVALID
            if p < 0:
                return p
        else:
            if c == 44:
                stack[depth - 1] = s - 1
                p += 1
                # a ',' must be followed by a member, not a closing bracket
                q = _skip_ws(b, p, n)
                if q >= n:
                    return INCOMPLETE
                if b[q] == 125 or b[q] == 93:
                    return INVALID
                continue
            if (s == 1 and c == 125) or (s == 3 and c == 93):
                depth -= 1
                p += 1
                if depth == 0:
                    return p
                continue
            return INVALID


@_no_refcounts
def _note_member(b, n, ka0, kan, a, ae, scratch, found):
    """What the analysis reads of one args member (key b[ka0:ka0+kan], value b[a:ae]) into found:
    correlation as an integer, where Input Dims' value is (see _args_end)."""
    if kan == 11 and _eq(b, ka0, kan, (99, 111, 114, 114, 101, 108, 97, 116, 105, 111, 110)):
        found[0] = -1
        if b[a] == 45 or 48 <= b[a] <= 57:
            _number(b, a, n, scratch)
            if scratch[2] == 1.0:
                if scratch[1] == 1.0:
                    found[0] = np.int64(scratch[0])
                else:
                    found[3] = 1
    elif kan == 10 and _eq(b, ka0, kan, (73, 110, 112, 117, 116, 32, 68, 105, 109, 115)):
        if b[a] == 110 and ae - a == 4:
            found[1], found[2] = -1, 0  # null: as if absent
        else:
            found[1], found[2] = a, ae - a


@_no_refcounts
def _args_end(b, p, n, scratch, stack, found):
    """The args object at b[p] ('{'): its end (or INCOMPLETE / INVALID), walking its members
    once; found = [correlation (-1: none, or not an integer), Input Dims' start (-1: none or
    null), its length, 1 where correlation is an integer too wide to convert exactly, or a key has an escape]."""
    found[0], found[1], found[2], found[3] = -1, -1, 0, 0
    a = _skip_ws(b, p + 1, n)
    if a >= n:
        return INCOMPLETE
    if b[a] == 125:
        return a + 1
    while True:
        if b[a] != 34:
            return INVALID
        kq = _string_end(b, a, n)
        if kq < 0:
            return kq
        ka0, kan = a + 1, kq - a - 2
        if _has_escape(b, ka0, kan):
            found[3] = 1
        a = _skip_ws(b, kq, n)
        if a >= n:
            return INCOMPLETE
        if b[a] != 58:
            return INVALID
        a = _skip_ws(b, a + 1, n)
        if a >= n:
            return INCOMPLETE
        ae = _value_end(b, a, n, scratch, stack)
        if ae < 0:
            return ae
        _note_member(b, n, ka0, kan, a, ae, scratch, found)
        a = _skip_ws(b, ae, n)
        if a >= n:
            return INCOMPLETE
        if b[a] == 125:
            return a + 1
        if b[a] != 44:
            return INVALID
        a = _skip_ws(b, a + 1, n)
        if a >= n:
            return INCOMPLETE


@_no_refcounts
def _copy(b, a, k, out, o):
    """b[a:a+k] into out[o:]; the new end. A word at a time where both arrays hold the words (the
    last word overlaps the one before it rather than a byte loop finishing the tail)."""
    if k >= 8 and a + k <= b.shape[0] and o + k <= out.shape[0]:
        j = 0
        while j + 8 <= k:
            _store8(out, o + j, _load8(b, a + j))
            j += 8
        if j < k:
            _store8(out, o + k - 8, _load8(b, a + k - 8))
        return o + k
    for j in range(k):
        out[o + j] = b[a + j]
    return o + k


@_no_refcounts
def _value_min(b, p, n, scratch, stack, out, o):
    """_value_end that also copies the value into out[o:] without the whitespace outside its
    strings, in the same walk: (its end or INCOMPLETE / INVALID, the new end in out)."""
    c = b[p]
    if c == 34:
        e = _string_end(b, p, n)
    elif c == 45 or 48 <= c <= 57:
        e = _number_end(b, p, n)
    elif c == 116 or c == 102 or c == 110:
        e = _literal(b, p, n)
    elif c != 123 and c != 91:
        return INVALID, o
    else:
        e = -3
    if e != -3:
        if e < 0:
            return e, o
        return e, _copy(b, p, e - p, out, o)
    # a container: as _value_end, each token copied as it is passed
    stack[0] = 0 if c == 123 else 2
    out[o] = c
    o += 1
    depth = 1
    p += 1
    while True:
        p = _skip_ws(b, p, n)
        if p >= n:
            return INCOMPLETE, o
        c = b[p]
        s = stack[depth - 1]
        if s == 0 or s == 2:
            if (s == 0 and c == 125) or (s == 2 and c == 93):
                out[o] = c
                o += 1
                depth -= 1
                p += 1
                if depth == 0:
                    return p, o
                continue
            if s == 0:
                if c != 34:
                    return INVALID, o
                e = _string_end(b, p, n)
                if e < 0:
                    return e, o
                o = _copy(b, p, e - p, out, o)
                p = _skip_ws(b, e, n)
                if p >= n:
                    return INCOMPLETE, o
                if b[p] != 58:
                    return INVALID, o
                out[o] = 58
                o += 1
                p = _skip_ws(b, p + 1, n)
                if p >= n:
                    return INCOMPLETE, o
                c = b[p]
            stack[depth - 1] = s + 1
            if c == 123 or c == 91:
                if depth >= stack.shape[0]:
                    return INVALID, o
                stack[depth] = 0 if c == 123 else 2
                out[o] = c
                o += 1
                depth += 1
                p += 1
                continue
            if c == 34:
                e = _string_end(b, p, n)
            elif c == 45 or 48 <= c <= 57:
                e = _number_end(b, p, n)
            elif c == 116 or c == 102 or c == 110:
                e = _literal(b, p, n)
            else:
                return INVALID, o
            if e < 0:
                return e, o
            o = _copy(b, p, e - p, out, o)
            p = e
        else:
            if c == 44:
                stack[depth - 1] = s - 1
                out[o] = 44
                o += 1
                p += 1
                # a ',' must be followed by a member, not a closing bracket
                q = _skip_ws(b, p, n)
                if q >= n:
                    return INCOMPLETE, o
                if b[q] == 125 or b[q] == 93:
                    return INVALID, o
                continue
            if (s == 1 and c == 125) or (s == 3 and c == 93):
                out[o] = c
                o += 1
                depth -= 1
                p += 1
                if depth == 0:
                    return p, o
                continue
            return INVALID, o


@_no_refcounts
def _args_min(b, p, n, scratch, stack, found, out, o):
    """_args_end that also copies the object into out[o:] minified (as _minify writes it), in
    the same walk: (its end or INCOMPLETE / INVALID, the new end in out). The caller has made
    room for all of b[p:n]: the copy is never longer than what it was copied from."""
    found[0], found[1], found[2], found[3] = -1, -1, 0, 0
    out[o] = 123
    o += 1
    a = _skip_ws(b, p + 1, n)
    if a >= n:
        return INCOMPLETE, o
    if b[a] == 125:
        out[o] = 125
        return a + 1, o + 1
    while True:
        if b[a] != 34:
            return INVALID, o
        kq = _string_end(b, a, n)
        if kq < 0:
            return kq, o
        o = _copy(b, a, kq - a, out, o)
        ka0, kan = a + 1, kq - a - 2
        if _has_escape(b, ka0, kan):
            found[3] = 1
        a = _skip_ws(b, kq, n)
        if a >= n:
            return INCOMPLETE, o
        if b[a] != 58:
            return INVALID, o
        out[o] = 58
        o += 1
        a = _skip_ws(b, a + 1, n)
        if a >= n:
            return INCOMPLETE, o
        ae, o = _value_min(b, a, n, scratch, stack, out, o)
        if ae < 0:
            return ae, o
        _note_member(b, n, ka0, kan, a, ae, scratch, found)
        a = _skip_ws(b, ae, n)
        if a >= n:
            return INCOMPLETE, o
        if b[a] == 125:
            out[o] = 125
            return a + 1, o + 1
        if b[a] != 44:
            return INVALID, o
        out[o] = 44
        o += 1
        a = _skip_ws(b, a + 1, n)
        if a >= n:
            return INCOMPLETE, o


@_no_refcounts
def _has_escape(b, p, k):
    """Whether b[p:p+k] holds a backslash, a word at a time."""
    for j in range(0, k, 8):
        w = _word(b, p + j, min(8, k - j)) ^ BACKSLASHES  # a backslash is a zero byte now
        if ((w - ONES) & ~w & HIGHS) != 0:
            return True
    return False


@_no_refcounts
def _eq(b, p, n, word):
    """Whether b[p:p+n] holds ``word`` (a tuple of byte values)."""
    if n != len(word):
        return False
    for j in range(n):  # noqa: SIM110 (numba compiles no generator into all())
        if b[p + j] != word[j]:
            return False
    return True


MIX = np.uint64(0x9E3779B97F4A7C15)
MIX2 = np.uint64(0xBF58476D1CE4E5B9)


@_no_refcounts
def _same(a, ao, b, bo, k):
    """Whether a[ao:ao+k] and b[bo:bo+k] hold the same bytes, compared a word at a time."""
    for j in range(0, k, 8):
        m = min(8, k - j)
        if _word(a, ao + j, m) != _word(b, bo + j, m):
            return False
    return True


@_no_refcounts
def _intern(b, p, k, ns, slots, ent_off, ent_len, ent_ns, ent_id, ent_hash, store, state, ns_count):
    """The id (per namespace, in order of first appearance) of the bytes b[p:p+k]; new ones are
    copied into ``store``. The caller has made room (GROW) beforehand. ns_count[ns] counts a
    namespace's ids, ns_count[NS_COUNT + ns] is its last entry + 1 (0: none yet).

    Most events repeat the one before them in every namespace but the name (one pid, one tid,
    runs of one category): the last entry is compared first, a word or two. Otherwise the
    bytes are hashed and compared a word at a time, a multiply per 8 bytes; the final shifts
    bring the high bits, where a multiply carries what it mixed, down to the slot's."""
    last = ns_count[NS_COUNT + ns] - 1
    if last >= 0 and ent_len[last] == k and _same(store, ent_off[last], b, p, k):
        return ent_id[last]
    h = (np.uint64(ns) + np.uint64(1)) * MIX ^ np.uint64(k)
    for j in range(0, k, 8):
        h = (h ^ _word(b, p + j, min(8, k - j))) * MIX2
    h ^= h >> np.uint64(31)
    h *= MIX
    h ^= h >> np.uint64(29)
    mask = slots.shape[0] - 1
    at = np.int64(h & np.uint64(mask))
    while True:
        e = slots[at]
        if e < 0:
            break
        if ent_hash[e] == h and ent_ns[e] == ns and ent_len[e] == k and _same(store, ent_off[e], b, p, k):
            ns_count[NS_COUNT + ns] = e + 1
            return ent_id[e]
        at = (at + 1) & mask
    e = state[S_ENT]
    o = state[S_STORE]
    _copy(b, p, k, store, o)
    ent_off[e] = o
    ent_len[e] = k
    ent_ns[e] = ns
    ent_hash[e] = h
    ent_id[e] = ns_count[ns]
    ns_count[ns] += 1
    ns_count[NS_COUNT + ns] = e + 1
    slots[at] = e
    state[S_ENT] = e + 1
    state[S_STORE] = o + k
    return ent_id[e]


@_no_refcounts
def _minify(b, a, z, out, o):
    """b[a:z] (valid JSON) into out[o:] without the whitespace outside strings; the new end."""
    in_str = False
    p = a
    while p < z:
        c = b[p]
        if in_str:
            out[o] = c
            o += 1
            if c == 92:
                out[o] = b[p + 1]
                o += 1
                p += 2
                continue
            if c == 34:
                in_str = False
        elif not _ws(c):
            out[o] = c
            o += 1
            if c == 34:
                in_str = True
        p += 1
    return o


@numba.njit(cache=True)
def _write_note(out, o, kept):
    """{"args":"<kept> bytes of args, not kept"} at out[o:]; its end."""
    head = (123, 34, 97, 114, 103, 115, 34, 58, 34)  # {"args":"
    for c in head:
        out[o] = c
        o += 1
    digits = np.empty(20, np.uint8)
    k = 0
    while True:
        digits[k] = 48 + kept % 10
        kept //= 10
        k += 1
        if kept == 0:
            break
    for j in range(k - 1, -1, -1):
        out[o] = digits[j]
        o += 1
    tail = ' bytes of args, not kept"}'
    for j in range(len(tail)):
        out[o] = ord(tail[j])
        o += 1
    return o


@_no_refcounts
def _copy_slow(b, at, k, key, store, state, slow_ev, slow_off, slow_len):
    """A number the fast conversion does not take, copied out for Python to convert."""
    s = state[S_SLOW]
    o = state[S_STORE]
    for j in range(k):
        store[o + j] = b[at + j]
    slow_ev[s] = key
    slow_off[s] = o
    slow_len[s] = k
    state[S_STORE] = o + k
    state[S_SLOW] = s + 1


@numba.njit(cache=True, nogil=True)
def scan(
    b, n, final, state, ns_count,
    ev_ts, ev_dur, ev_name, ev_cat, ev_pid, ev_tid, ev_corr, ev_dims, ev_alen,
    args_buf, max_args,
    slots, ent_off, ent_len, ent_ns, ent_id, ent_hash, store,
    be_off, be_len, be_store, meta, slow_ev, slow_off, slow_len,
):  # fmt: skip
    """Walk b[state[S_POS]:n] unit by unit (a top-level member, or one trace event); returns
    R_DONE, R_MORE (b ends inside a unit and more input follows: state[S_POS] is its start),
    R_GROW (a table is full: grow it and call again) or R_BAD (state[S_WHY] says why)."""
    scratch = np.zeros(3)
    stack = np.empty(MAX_DEPTH, np.int8)
    found = np.zeros(4, np.int64)
    field_at = np.empty(NS_COUNT, np.int64)
    field_len = np.empty(NS_COUNT, np.int64)
    field_id = np.empty(NS_COUNT, np.int64)
    pos = state[S_POS]
    mode = state[S_MODE]
    while True:
        pos = _skip_ws(b, pos, n)
        state[S_POS] = pos
        state[S_MODE] = mode
        if pos >= n:
            if mode == M_END:
                return R_DONE
            if final:
                state[S_WHY] = 4
                return R_BAD
            return R_MORE
        c = b[pos]
        if mode == M_START:
            if c == 91:
                mode = M_EVENTS_FIRST
                state[S_META] = -1  # a bare list: no other members
            elif c == 123:
                mode = M_TOP_FIRST
            else:
                state[S_WHY] = 5
                return R_BAD
            pos += 1
            continue
        if mode == M_END:
            state[S_WHY] = 1
            return R_BAD
        if mode == M_TOP_NEXT or mode == M_EVENTS_NEXT:  # noqa: SIM109 (plain compares compile simplest)
            closer = 125 if mode == M_TOP_NEXT else 93
            if c == 44:
                pos += 1
                mode = M_TOP_KEY if mode == M_TOP_NEXT else M_EVENTS
            elif c == closer:
                pos += 1
                # the object closed, or a bare list did; or traceEvents did: back in the object
                mode = M_END if mode == M_TOP_NEXT or state[S_META] < 0 else M_TOP_NEXT
            else:
                state[S_WHY] = 1
                return R_BAD
            continue
        if mode == M_TOP_KEY or mode == M_TOP_FIRST:  # noqa: SIM109
            if mode == M_TOP_FIRST and c == 125:
                pos += 1
                mode = M_END
                continue
            if c != 34:
                state[S_WHY] = 1
                return R_BAD
            q = _string_end(b, pos, n)
            if q == INVALID:
                state[S_WHY] = 1
                return R_BAD
            if q == INCOMPLETE:
                if final:
                    state[S_WHY] = 4
                    return R_BAD
                return R_MORE
            if _has_escape(b, pos + 1, q - pos - 2):
                state[S_WHY] = 2
                return R_BAD
            is_events = _eq(b, pos + 1, q - pos - 2, (116, 114, 97, 99, 101, 69, 118, 101, 110, 116, 115))
            v = _skip_ws(b, q, n)
            if v >= n or b[v] != 58:
                if v < n or final:
                    state[S_WHY] = 4 if v >= n else 1
                    return R_BAD
                return R_MORE
            v = _skip_ws(b, v + 1, n)
            if v >= n:
                if final:
                    state[S_WHY] = 4
                    return R_BAD
                return R_MORE
            if is_events:
                if b[v] != 91 or state[S_META] >= 1 << 60:
                    state[S_WHY] = 5 if b[v] != 91 else 2
                    return R_BAD
                state[S_META] += 1 << 60  # seen (a second traceEvents would be taken for the first)
                pos = v + 1
                mode = M_EVENTS_FIRST
                continue
            e = _value_end(b, v, n, scratch, stack)
            if e < 0:
                if e == INVALID or final:
                    state[S_WHY] = 1 if e == INVALID else 4
                    return R_BAD
                return R_MORE
            used = state[S_META] & ((1 << 60) - 1)
            if used + (e - pos) + 1 > meta.shape[0]:
                return R_GROW
            if used > 0:
                meta[used] = 44
                used += 1
            for j in range(pos, e):
                meta[used] = b[j]
                used += 1
            state[S_META] = (state[S_META] & ~((1 << 60) - 1)) + used
            pos = e
            mode = M_TOP_NEXT
            continue
        # M_EVENTS or M_EVENTS_FIRST: one element of traceEvents
        if mode == M_EVENTS_FIRST and c == 93:
            pos += 1
            mode = M_END if state[S_META] < 0 else M_TOP_NEXT
            continue
        if c != 123:
            e = _value_end(b, pos, n, scratch, stack)
            if e < 0:
                if e == INVALID or final:
                    state[S_WHY] = 1 if e == INVALID else 4
                    return R_BAD
                return R_MORE
            state[S_SKIPPED] += 1  # not an event object
            pos = e
            mode = M_EVENTS_NEXT
            continue
        # room for this event, whatever it turns out to hold (its length bounds every copy)
        ev = state[S_EV]
        if (
            ev >= ev_ts.shape[0]
            or state[S_ENT] + 8 > ent_off.shape[0]
            or 2 * (state[S_ENT] + 8) > slots.shape[0]
            or state[S_BE] >= be_off.shape[0]
            or state[S_SLOW] + 2 > slow_ev.shape[0]
        ):
            return R_GROW
        start = pos
        p = pos + 1
        ph = 0
        name_at, name_len = -1, 0
        name_bad = False
        cat_at, cat_len = -1, 0
        pid_at, pid_len, tid_at, tid_len = -1, 0, -1, 0
        ts_kind, dur_kind = 0, 0  # 0 missing, 1 number, 2 slow number, 3 other
        ts_v, dur_v = 0.0, 0.0
        ts_at, ts_len, dur_at, dur_len = 0, 0, 0, 0
        args_at, args_end = -1, -1
        amin = -1  # the length args_buf[state[S_ARGS]:] holds args_at's object minified (-1: not)
        args_odd = False
        corr = np.int64(-1)
        dims_at, dims_len = -1, 0
        first = True
        bad = 0  # 1 invalid, 2 unsupported shape, 4 incomplete
        while True:
            p = _skip_ws(b, p, n)
            if p >= n:
                bad = 4
                break
            c = b[p]
            if c == 125 and first:
                p += 1
                break
            if not first:
                if c == 125:
                    p += 1
                    break
                if c != 44:
                    bad = 1
                    break
                p = _skip_ws(b, p + 1, n)
                if p >= n:
                    bad = 4
                    break
                c = b[p]
            first = False
            if c != 34:
                bad = 1
                break
            q = _string_end(b, p, n)
            if q < 0:
                bad = 1 if q == INVALID else 4
                break
            k0, kn = p + 1, q - p - 2
            if _has_escape(b, k0, kn):  # a key spelled with an escape: orjson reads it
                bad = 2
                break
            kw = _word(b, k0, kn) if kn <= 8 else np.uint64(0)  # the key as a number (see K_TS)
            v = _skip_ws(b, q, n)
            if v >= n:
                bad = 4
                break
            if b[v] != 58:
                bad = 1
                break
            v = _skip_ws(b, v + 1, n)
            if v >= n:
                bad = 4
                break
            c = b[v]
            if c == 123 and kw == K_ARGS:
                # args: its members walked once (validated, correlation and Input Dims found)
                # and, unless the event is already known to be a python_function's (whose args
                # are not kept), copied minified to args_buf[state[S_ARGS]:] in the same walk;
                # only kept (state[S_ARGS] moved on) if the event is.
                if cat_at >= 0 and _eq(b, cat_at, cat_len, PYTHON_FUNCTION):
                    e = _args_end(b, v, n, scratch, stack, found)
                    amin = -1
                else:
                    if state[S_ARGS] + (n - v) > args_buf.shape[0]:
                        return R_GROW  # nothing of this event written yet: it is walked again
                    e, o_end = _args_min(b, v, n, scratch, stack, found, args_buf, state[S_ARGS])
                    amin = o_end - state[S_ARGS]
                corr, dims_at, dims_len = found[0], found[1], found[2]
                args_at, args_end, args_odd = v, e, False
                if found[3] != 0:
                    bad = 2
                    break
            elif (c == 45 or 48 <= c <= 57) and (kw == K_TS or kw == K_DUR):  # noqa: SIM109 (plain compares)
                # ts or dur: parsed once, its value left in scratch
                e = _number(b, v, n, scratch)
            else:
                e = _value_end(b, v, n, scratch, stack)
            if e < 0:
                bad = 1 if e == INVALID else 4
                break
            if c == 123 and kw == K_ARGS:
                pass  # read above
            elif kw == K_PH:
                ph = b[v + 1] if (c == 34 and e - v == 3) else 0
            elif kw == K_NAME:
                if c == 34:
                    name_at, name_len, name_bad = v + 1, e - v - 2, False
                else:
                    name_at, name_bad = v, True
            elif kw == K_CAT:
                if c == 34:
                    cat_at, cat_len = v + 1, e - v - 2
                else:
                    bad = 2
                    break
            elif kw == K_TS:
                if c == 45 or 48 <= c <= 57:  # scratch holds its value (read above)
                    ts_kind = 1 if scratch[1] == 1.0 else 2
                    ts_v, ts_at, ts_len = scratch[0], v, e - v
                else:
                    ts_kind = 3
            elif kw == K_DUR:
                if c == 45 or 48 <= c <= 57:
                    dur_kind = 1 if scratch[1] == 1.0 else 2
                    dur_v, dur_at, dur_len = scratch[0], v, e - v
                else:
                    dur_kind = 3
            elif kw == K_PID:
                if c == 123 or c == 91:
                    bad = 2
                    break
                pid_at, pid_len = v, e - v
            elif kw == K_TID:
                if c == 123 or c == 91:
                    bad = 2
                    break
                tid_at, tid_len = v, e - v
            elif kw == K_ARGS:  # not an object
                corr, dims_at, dims_len = -1, -1, 0
                args_at, args_end, args_odd = -1, -1, False
                falsy = c == 110 or c == 102 or (c == 34 and e - v == 2) or (c == 48 and e - v == 1)
                empty_list = c == 91 and _skip_ws(b, v + 1, n) == e - 1
                args_odd = not (falsy or empty_list)  # truthy and not an object (objects are above)
            p = e
        if bad == 4 and not final:
            return R_MORE
        if bad:
            state[S_WHY] = 4 if bad == 4 else bad
            return R_BAD
        room = p - start  # bounds every copy this event makes
        if (
            state[S_STORE] + room > store.shape[0]
            or state[S_ARGS] + room > args_buf.shape[0]
            or state[S_BESTORE] + room > be_store.shape[0]
        ):
            return R_GROW
        pos = p
        mode = M_EVENTS_NEXT
        if ph == 66 or ph == 69:  # B, E: kept whole for pairing
            o = state[S_BESTORE]
            for j in range(start, p):
                be_store[o + j - start] = b[j]
            be_off[state[S_BE]] = o
            be_len[state[S_BE]] = p - start
            state[S_BESTORE] = o + p - start
            state[S_BE] += 1
            continue
        if ph != 88:
            continue
        if ts_kind == 0 or dur_kind == 0 or name_at < 0:
            state[S_SKIPPED] += 1
            continue
        is_trace = cat_at >= 0 and _eq(b, cat_at, cat_len, (84, 114, 97, 99, 101))
        if ts_kind == 3 or dur_kind == 3 or (dur_kind == 1 and dur_v < 0) or is_trace:
            if not is_trace:
                state[S_SKIPPED] += 1
            continue
        if dur_kind == 2 and b[dur_at] == 45:
            if not is_trace:
                state[S_SKIPPED] += 1
            continue
        if name_bad:
            state[S_WHY] = 2
            return R_BAD
        python = cat_at >= 0 and _eq(b, cat_at, cat_len, PYTHON_FUNCTION)
        if python:
            corr, dims_at, args_at = -1, -1, -1
        elif args_odd:
            state[S_WHY] = 2
            return R_BAD
        ev_ts[ev] = ts_v
        ev_dur[ev] = dur_v
        # the five interned fields in one loop (their namespaces are 0 to 4, in this order):
        # one inlined copy of _intern, not five, keeps the event loop small enough for the
        # registers
        field_at[NS_NAME], field_len[NS_NAME] = name_at, name_len
        field_at[NS_CAT], field_len[NS_CAT] = cat_at, cat_len
        field_at[NS_PID], field_len[NS_PID] = pid_at, pid_len
        field_at[NS_TID], field_len[NS_TID] = tid_at, tid_len
        field_at[NS_DIMS], field_len[NS_DIMS] = dims_at, dims_len
        for ns in range(NS_COUNT):
            field_id[ns] = (
                -1
                if field_at[ns] < 0
                else _intern(
                    b,
                    field_at[ns],
                    field_len[ns],
                    ns,
                    slots,
                    ent_off,
                    ent_len,
                    ent_ns,
                    ent_id,
                    ent_hash,
                    store,
                    state,
                    ns_count,
                )
            )
        ev_name[ev] = field_id[NS_NAME]
        ev_cat[ev] = field_id[NS_CAT]
        ev_pid[ev] = field_id[NS_PID]
        ev_tid[ev] = field_id[NS_TID]
        ev_dims[ev] = field_id[NS_DIMS]
        ev_corr[ev] = corr
        alen = 0
        if args_at >= 0 and amin < 0:  # not copied as it was walked (a cat after it said python)
            amin = _minify(b, args_at, args_end, args_buf, state[S_ARGS]) - state[S_ARGS]
        if args_at >= 0 and amin > 2:  # a non-empty object ('{}' minified is 2 bytes)
            o = state[S_ARGS]
            end = o + amin
            alen = amin
            if alen > max_args:  # too long to keep: a note in its place, as _Collector writes
                end = _write_note(args_buf, o, alen)
                alen = end - o
            state[S_ARGS] = end
        ev_alen[ev] = alen
        if ts_kind == 2:
            _copy_slow(b, ts_at, ts_len, ev * 2, store, state, slow_ev, slow_off, slow_len)
        if dur_kind == 2:
            _copy_slow(b, dur_at, dur_len, ev * 2 + 1, store, state, slow_ev, slow_off, slow_len)
        state[S_EV] = ev + 1


@dataclass
class Scanned:
    """What a scan kept: per complete event its columns, the interned tables as raw bytes.
    The arrays are views of the scanner's tables (over-allocated, but their unused tail was
    never written, so it takes no memory): copying them would double the peak."""

    ts: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    cat: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    corr: np.ndarray
    dims: np.ndarray
    args_len: np.ndarray
    args: Any  # every kept args object back to back: a uint8 array, or the args_file given
    tables: list[list[bytes]]  # per namespace, the raw bytes of each id
    begin_end: list[bytes]  # the B and E events, whole
    meta: bytes  # the top-level members other than traceEvents, comma-separated ('' for a list)
    slow: list[tuple[int, int, bytes]]  # (event, 0 ts / 1 dur, the number's text)
    skipped: int


class ScanStopped(ValueError):
    """The scanner cannot read this file: orjson reads it (or says why it is not JSON)."""


_EVENT_ARRAYS = (
    ("ts", np.float64),
    ("dur", np.float64),
    ("name", np.int32),
    ("cat", np.int32),
    ("pid", np.int32),
    ("tid", np.int32),
    ("corr", np.int64),
    ("dims", np.int32),
    ("alen", np.int32),
)


def _grown(a: np.ndarray, at_least: int, fill: int | None = None) -> np.ndarray:
    size = max(2 * len(a), at_least)
    out = np.empty(size, a.dtype) if fill is None else np.full(size, fill, a.dtype)
    out[: len(a)] = a
    return out


class _Tables:
    """The scanner's output tables, grown by doubling when it says one is full."""

    def __init__(self, total: int) -> None:
        # Sized for the most the input could need (an event takes at least 20 bytes; the
        # bytes kept are at most the bytes read): np.empty of that size only reserves address
        # space, and only what the scan writes takes memory, so nothing is grown and copied.
        self.state = np.zeros(N_STATE, np.int64)
        self.ns_count = np.zeros(2 * NS_COUNT, np.int64)  # see _intern
        self.ev = {k: np.empty(max(total // 20, 1024), t) for k, t in _EVENT_ARRAYS}
        self.args = np.empty(max(total, 1 << 20), np.uint8)
        self.slots = np.full(1 << 12, -1, np.int64)
        self.ent_off = np.empty(1 << 10, np.int64)
        self.ent_len = np.empty(1 << 10, np.int64)
        self.ent_ns = np.empty(1 << 10, np.int64)
        self.ent_id = np.empty(1 << 10, np.int64)
        self.ent_hash = np.empty(1 << 10, np.uint64)
        self.store = np.empty(max(total, 1 << 20), np.uint8)
        self.be_off = np.empty(256, np.int64)
        self.be_len = np.empty(256, np.int64)
        self.be_store = np.empty(max(total, 1 << 20), np.uint8)
        self.meta = np.empty(1 << 16, np.uint8)
        self.slow_ev = np.empty(256, np.int64)
        self.slow_off = np.empty(256, np.int64)
        self.slow_len = np.empty(256, np.int64)

    def run(self, buf: np.ndarray, n: int, final: bool) -> int:
        e = self.ev
        return scan(
            buf, n, final, self.state, self.ns_count,
            e["ts"], e["dur"], e["name"], e["cat"], e["pid"], e["tid"], e["corr"], e["dims"], e["alen"],
            self.args, MAX_ARGS_BYTES,
            self.slots, self.ent_off, self.ent_len, self.ent_ns, self.ent_id, self.ent_hash, self.store,
            self.be_off, self.be_len, self.be_store, self.meta, self.slow_ev, self.slow_off, self.slow_len,
        )  # fmt: skip

    def grow(self, room: int) -> None:
        """Make room for one more unit of up to ``room`` bytes in every table."""
        s = self.state
        if s[S_EV] >= len(self.ev["ts"]):
            self.ev = {k: _grown(v, 0) for k, v in self.ev.items()}
        if s[S_ENT] + 8 > len(self.ent_off) or 2 * (s[S_ENT] + 8) > len(self.slots):
            for k in ("ent_off", "ent_len", "ent_ns", "ent_id", "ent_hash"):
                setattr(self, k, _grown(getattr(self, k), 0))
            self.slots = np.full(4 * len(self.ent_off), -1, np.int64)
            self._rehash()
        for k, used in (("store", S_STORE), ("args", S_ARGS), ("be_store", S_BESTORE)):
            if s[used] + room > len(getattr(self, k)):
                setattr(self, k, _grown(getattr(self, k), int(s[used] + room)))
        if s[S_BE] >= len(self.be_off):
            self.be_off, self.be_len = _grown(self.be_off, 0), _grown(self.be_len, 0)
        if s[S_SLOW] + 2 > len(self.slow_ev):
            self.slow_ev, self.slow_off, self.slow_len = (
                _grown(a, 0) for a in (self.slow_ev, self.slow_off, self.slow_len)
            )
        if (s[S_META] & ((1 << 60) - 1)) + room + 1 > len(self.meta):
            self.meta = _grown(self.meta, int((s[S_META] & ((1 << 60) - 1)) + room + 1))

    @property
    def events_seen(self) -> bool:
        return bool(self.state[S_META] < 0 or self.state[S_META] >= 1 << 60)

    def _rehash(self) -> None:
        _rehash(self.slots, self.ent_hash, int(self.state[S_ENT]))

    def spill(self, args_file: Any) -> None:
        """Hand the args kept so far to ``args_file`` (its write method) and reuse the buffer:
        only offsets by length are kept, so the args need not stay in memory."""
        used = int(self.state[S_ARGS])
        if used:
            args_file.write(memoryview(self.args[:used]))
            self.state[S_ARGS] = 0

    def result(self, args_file: Any = None) -> Scanned:
        s = self.state
        n = int(s[S_EV])
        tables: list[list[bytes]] = [[b""] * int(self.ns_count[ns]) for ns in range(NS_COUNT)]
        store = self.store
        for e in range(int(s[S_ENT])):
            o, k = int(self.ent_off[e]), int(self.ent_len[e])
            tables[int(self.ent_ns[e])][int(self.ent_id[e])] = store[o : o + k].tobytes()
        be = [
            self.be_store[int(o) : int(o) + int(k)].tobytes()
            for o, k in zip(self.be_off[: s[S_BE]], self.be_len[: s[S_BE]], strict=True)
        ]
        slow = [
            (int(i) // 2, int(i) % 2, store[int(o) : int(o) + int(k)].tobytes())
            for i, o, k in zip(
                self.slow_ev[: s[S_SLOW]], self.slow_off[: s[S_SLOW]], self.slow_len[: s[S_SLOW]], strict=True
            )
        ]
        e = self.ev
        return Scanned(
            ts=e["ts"][:n],
            dur=e["dur"][:n],
            name=e["name"][:n],
            cat=e["cat"][:n],
            pid=e["pid"][:n],
            tid=e["tid"][:n],
            corr=e["corr"][:n],
            dims=e["dims"][:n],
            args_len=e["alen"][:n],
            args=self.args[: s[S_ARGS]] if args_file is None else args_file,
            tables=tables,
            begin_end=be,
            meta=self.meta[: s[S_META] & ((1 << 60) - 1)].tobytes() if s[S_META] >= 0 else b"",
            slow=slow,
            skipped=int(s[S_SKIPPED]),
        )


@numba.njit(cache=True)
def _rehash(slots, ent_hash, count):
    mask = slots.shape[0] - 1
    for e in range(count):
        at = np.int64(ent_hash[e] & np.uint64(mask))
        while slots[at] >= 0:
            at = (at + 1) & mask
        slots[at] = e


MAX_ARGS_BYTES = 64 * 1024
READ_BYTES = 8 << 20


def scan_stream(
    f: BinaryIO,
    total: int,
    on_progress: Callable[[int], None] | None = None,
    max_bytes: int | None = None,
    *,
    limit: int | None = None,
    inside_events: int | None = None,
    args_file: Any = None,
) -> Scanned:
    """Scan a trace from ``f`` (``total``: its size in bytes, or a guess: tables grow past it),
    READ_BYTES at a time, telling ``on_progress`` the bytes read so far; at most ``max_bytes``
    read (else OverflowError). Raises ScanStopped with the reason when the file is not for this
    reader (not JSON, cut short, no traceEvents list, a shape it does not take).

    For a file read in two halves: ``limit`` stops after that many bytes, which must end just
    before an event of traceEvents (else ScanStopped); ``inside_events`` starts at an event of
    traceEvents, of a bare list (-1) or of an object (1). ``args_file`` (an object with a write
    method) takes the kept args as the scan goes, instead of memory."""
    tables = _Tables(total)
    if inside_events is not None:
        tables.state[S_MODE] = M_EVENTS
        tables.state[S_META] = -1 if inside_events < 0 else 1 << 60
    buf = np.empty(READ_BYTES * 2, np.uint8)
    have = 0  # bytes in buf from the current unit on
    read = 0
    eof = False
    while True:
        if not eof:
            if len(buf) - have < READ_BYTES:
                buf = _grown(buf, have + READ_BYTES)
            want = READ_BYTES if limit is None else min(READ_BYTES, limit - read)
            got = f.readinto(memoryview(buf)[have : have + want]) if want > 0 else 0
            if not got:
                eof = True
            else:
                have += got
                read += got
                if max_bytes is not None and read > max_bytes:
                    raise OverflowError(read)
        while True:
            result = tables.run(buf, have, eof and limit is None)
            if args_file is not None:
                tables.spill(args_file)
            if result != R_GROW:
                break
            tables.grow(have - int(tables.state[S_POS]))
        if result == R_DONE:
            break
        if result == R_BAD:
            raise ScanStopped(WHY.get(int(tables.state[S_WHY]), "an unexpected shape"))
        if eof:  # a limit reached: it must fall between two events
            if int(tables.state[S_MODE]) != M_EVENTS or int(tables.state[S_POS]) != have:
                raise ScanStopped("the split is not between two events")
            break
        # R_MORE: keep the unfinished unit, read on
        pos = int(tables.state[S_POS])
        buf[: have - pos] = buf[pos:have]
        have -= pos
        tables.state[S_POS] = 0
        if on_progress is not None:
            on_progress(read)
    if not tables.events_seen:
        raise ScanStopped(WHY[5])
    return tables.result(args_file)


_BETWEEN_EVENTS = re.compile(rb"\}\s*,\s*\{")
SPLIT_MIN_BYTES = 32 << 20
PARTS_PER_WORKER = 2  # see scan_file; 4 balanced no better and peaked 60 MiB higher (bench/RESULTS.md)


def scan_file(
    path: str | Path,
    on_progress: Callable[[float], None] | None = None,
    workers: int = 2,
    args_files: Callable[[], Any] | None = None,
    parts_per_worker: int | None = None,
    each: Callable[[Scanned], Any] | None = None,
) -> list[Any]:
    """A plain (not gzipped) trace file, scanned by ``workers`` threads at once (the compiled
    scan lets go of the GIL) where it is big enough; each part's Scanned in order.

    A part's cost is its events, not its bytes: a with_stack trace ends with its Python
    frames, smaller than the operators before them, so its second half holds some 40% more
    events than its first. The file is cut into ``parts_per_worker`` parts per thread
    (PARTS_PER_WORKER), and each thread takes the next part left, so the threads finish
    within a small part of each other.

    The parts are cut where the bytes look like the gap between two events ('}', ',', '{');
    a cut that is not one (inside a string) shows when the part before it does not end exactly
    there, and the file is then scanned in one piece. ``args_files`` makes each part's
    args_file (see scan_stream).

    ``each`` (a Scanned -> anything) is applied to each part in order in the calling thread as
    soon as that part and those before it are scanned, while the threads scan the rest: a part
    is turned into columns in the time the scan would leave a core idle at its end, and its
    tables are freed before the last part is scanned. The list holds what it returned."""
    path = Path(path)
    total = path.stat().st_size
    per = PARTS_PER_WORKER if parts_per_worker is None else parts_per_worker
    convert: Callable[[Scanned], Any] = each if each is not None else (lambda scanned: scanned)
    cuts = _cuts(path, total, workers * per) if workers > 1 and total >= SPLIT_MIN_BYTES else []
    read = [0] * (len(cuts) + 1)
    lock = threading.Lock()  # the parts' threads report in turn: a caller may write lines to a pipe

    def progress(part: int, n: int) -> None:
        with lock:
            read[part] = n
            if on_progress is not None:
                on_progress(min(sum(read) / total, 1.0))

    if cuts:
        with path.open("rb") as f:
            bare_list = f.read(4096).lstrip().startswith(b"[")
        bounds = [0, *cuts, total]

        def part(i: int) -> Scanned:
            with path.open("rb") as f:
                f.seek(bounds[i])
                return scan_stream(
                    f,
                    bounds[i + 1] - bounds[i],
                    lambda n: progress(i, n),
                    limit=None if i == len(cuts) else bounds[i + 1] - bounds[i],
                    inside_events=None if i == 0 else (-1 if bare_list else 1),
                    args_file=args_files() if args_files else None,
                )

        pool = ThreadPoolExecutor(min(workers, len(bounds) - 1))
        try:
            futures: list[Any] = [pool.submit(part, i) for i in range(len(bounds) - 1)]
            done = []
            for i in range(len(futures)):
                scanned = futures[i].result()
                futures[i] = None  # the future held the part's tables
                done.append(convert(scanned))
                del scanned  # gone once converted
            return done
        except ScanStopped:
            pass  # a cut inside a string, or the file is not for this reader: one piece
        finally:
            pool.shutdown(cancel_futures=True)  # the parts not begun are not scanned for nothing
    with path.open("rb") as f:
        return [
            convert(scan_stream(f, total, lambda n: progress(0, n), args_file=args_files() if args_files else None))
        ]


def _cuts(path: Path, total: int, parts: int) -> list[int]:
    """Offsets of an event's '{' near each 1/parts of the file."""
    cuts = []
    with path.open("rb") as f:
        for k in range(1, parts):
            f.seek(total * k // parts)
            window = f.read(1 << 20)
            found = _BETWEEN_EVENTS.search(window)
            if found is None:
                return []
            cuts.append(total * k // parts + found.end() - 1)
    return cuts if cuts == sorted(set(cuts)) else []


def warm_up() -> None:
    """Compile (the first time on a machine) or load the cached code."""
    import io

    doc = b'{"a": [1], "traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 2, "args": {"a": 1}}]}'
    scan_stream(io.BytesIO(doc), len(doc))
