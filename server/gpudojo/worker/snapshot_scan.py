"""Reading a CUDA memory snapshot's pickle without building its Python objects (run in the
memory-analysis worker only: it imports numba, which the server process never loads).

A real 1M-entry snapshot is about 130 MB of pickle holding a million trace dicts, each with
a 20-deep list of (shared) frame dicts; unpickling it builds some 40 million Python objects
before the analysis looks at one. This module interprets the pickle's opcodes itself (with
numba, compiled once and cached on disk) and keeps only what the analysis reads: for every
dict six fields (action, addresses, sizes, times, frames, device_free, whichever apply), for
every list of frame dicts only its innermost user frame, and the children of the other
lists (device_traces, the trace, segments and their blocks).

It understands the opcodes that plain containers and scalars use (protocols 2-5). Anything
else (a global, a set, an object's state, an integer wider than 64 bits, a stack shape it
does not expect) stops the scan with a reason, and the caller falls back to the restricted
unpickler in snapshot.py, which reads every plain pickle and refuses the rest by name.
Every read and write is bounds-checked by hand: numba does not check indices.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

# Value kinds on the VM's stack and in the memo.
K_NONE, K_INT, K_FLOAT, K_BOOL, K_STR, K_BYTES, K_LIST, K_DICT, K_TUPLE, K_MARK = range(10)

# The dict keys the analysis reads, each with a bit (which keys a dict has) and a slot (where
# its value goes: keys that never meet in one dict share a slot).
KEYS = [
    # name, slot
    ("action", 0),
    ("addr", 1),
    ("size", 2),
    ("time_us", 3),
    ("frames", 4),
    ("device_free", 5),
    ("filename", 0),
    ("line", 1),
    ("name", 2),
    ("segments", 0),
    ("device_traces", 1),
    ("device", 0),
    ("address", 1),
    ("blocks", 2),
    ("requested_size", 3),
    ("state", 5),
]
SLOTS = 6
CONFLICT = 1 << 30  # set on a dict where two tracked keys met in one slot: the caller falls back
BIT = {name: 1 << i for i, (name, _) in enumerate(KEYS)}
_KEY_BYTES = np.frombuffer(b"".join(name.encode() for name, _ in KEYS), dtype=np.uint8)
_KEY_OFF = np.cumsum([0] + [len(name) for name, _ in KEYS]).astype(np.int64)
_KEY_SLOT = np.array([slot for _, slot in KEYS], dtype=np.int8)
# Frames from these places are the framework's, not the learner's (as in snapshot.py).
LIBRARY_MARKERS = ("/torch/", "/site-packages/", "/dist-packages/", "<frozen", "/lib/python3", "??")
_LIB_BYTES = np.frombuffer(b"".join(m.encode() for m in LIBRARY_MARKERS), dtype=np.uint8)
_LIB_OFF = np.cumsum([0] + [len(m) for m in LIBRARY_MARKERS]).astype(np.int64)
_FILENAME_BIT = BIT["filename"]

# Why a scan stopped (status > 0): the fallback reports the restricted unpickler's verdict.
STOP_REASONS = {
    1: "an opcode this reader does not handle",
    2: "a truncated or malformed pickle",
    3: "an integer wider than 64 bits",
    4: "a stack shape it does not expect",
}


@dataclass
class Scan:
    """The scan's tables (arrays indexed by string, dict and list number)."""

    data: np.ndarray
    root_kind: int
    root_val: int
    str_off: np.ndarray
    str_len: np.ndarray
    dict_keys: np.ndarray
    dict_kind: np.ndarray
    dict_val: np.ndarray
    list_user: np.ndarray  # the first user frame (a dict number) of a list of frames, else -1
    list_start: np.ndarray  # 1 where the list has children other than frames
    list_count: np.ndarray
    edge_parent: np.ndarray
    edge_kind: np.ndarray
    edge_val: np.ndarray
    _by_parent: tuple | None = None

    def text(self, index: int, limit: int | None = None) -> str:
        """String ``index``; with ``limit``, its first ``limit`` characters only, decoded from at
        most 4 * limit bytes (a character's most), so that a huge string is never copied whole."""
        off, n = int(self.str_off[index]), int(self.str_len[index])
        if limit is not None:
            n = min(n, 4 * limit)
        text = bytes(self.data[off : off + n]).decode("utf-8", "replace")
        return text if limit is None else text[:limit]

    def children(self, list_index: int) -> tuple[np.ndarray, np.ndarray]:
        """Kinds and values of a list's children (those that are not frames), in order."""
        if not self.list_start[list_index]:
            return np.zeros(0, np.int8), np.zeros(0, np.int64)
        if self._by_parent is None:
            order = np.argsort(self.edge_parent, kind="stable")
            self._by_parent = (self.edge_parent[order], self.edge_kind[order], self.edge_val[order])
        parents, kinds, vals = self._by_parent
        lo, hi = np.searchsorted(parents, [list_index, list_index + 1])
        return kinds[lo:hi], vals[lo:hi]


# The scanner's counters, kept in one array so that a scan can stop to let Python grow a
# table and then resume where it stopped (no array is reallocated inside the compiled loop).
S_POS, S_SP, S_MP, S_MEMO, S_STR, S_DICT, S_LIST, S_EDGE, S_ROOT_KIND, S_ROOT_VAL, S_NEED = range(11)
DONE = 0
PAUSE = 5  # the scan reached the byte the caller asked to hear about (progress)
GROW = 16  # GROW + table number: that table is full (S_NEED: the size it needs)
T_STACK, T_MARKS, T_MEMO, T_STR, T_DICT, T_LIST, T_EDGE = range(7)


@numba.njit(cache=True, inline="always")
def _uint(data, at, n):
    v = np.int64(0)
    for i in range(n):
        v |= np.int64(data[at + i]) << np.int64(8 * i)
    return v


@numba.njit(cache=True)
def _contains(data, off, n, needles, lo, hi):
    m = hi - lo
    for s in range(0, n - m + 1):
        ok = True
        for j in range(m):
            if data[off + s + j] != needles[lo + j]:
                ok = False
                break
        if ok:
            return True
    return False


@numba.njit(cache=True)
def _key_index(data, off, n, key_bytes, key_off):
    for k in range(key_off.shape[0] - 1):
        if key_off[k + 1] - key_off[k] == n and _contains(data, off, n, key_bytes, key_off[k], key_off[k + 1]):
            return k
    return -1


@numba.njit(cache=True)
def _is_library(data, off, n, lib_bytes, lib_off):
    if n == 0:
        return True
    for m in range(lib_off.shape[0] - 1):  # noqa: SIM110 (numba compiles no generator into any())
        if _contains(data, off, n, lib_bytes, lib_off[m], lib_off[m + 1]):
            return True
    return False


@numba.njit(cache=True)
def _scan(
    data, key_bytes, key_off, key_slot, lib_bytes, lib_off, filename_bit, state, pause_at,
    st_kind, st_val, marks, memo_kind, memo_val,
    str_off, str_len, str_slot, str_lib,
    dict_keys, dict_kind, dict_val,
    list_user, list_start, list_count,
    edge_parent, edge_kind, edge_val,
):  # fmt: skip
    """Run the opcode loop from state[S_POS]; returns DONE, a stop reason, or GROW + table."""
    size = data.shape[0]
    pos, sp, mp = state[S_POS], state[S_SP], state[S_MP]
    nmemo, nstr, ndict, nlist, nedge = state[S_MEMO], state[S_STR], state[S_DICT], state[S_LIST], state[S_EDGE]
    status = -1
    need = np.int64(0)
    limit = min(size, pause_at)
    # Tables are checked where an opcode adds to them, before it changes anything, so that a
    # scan stopped to grow one resumes at that opcode; the stack and the marks are checked
    # only on a push (a snapshot's nesting is shallow).
    cap_stack, cap_marks = st_kind.shape[0], marks.shape[0]
    while True:
        at = pos
        if pos >= limit:
            status = 2 if pos >= size else PAUSE
            break
        if sp + 2 >= cap_stack:
            status, need = GROW + T_STACK, sp + 2
            break
        op = data[pos]
        pos += 1
        push_kind = -1
        push_val = np.int64(0)
        if op == 0x68 or op == 0x6A:  # BINGET, LONG_BINGET (the commonest: shared frames)
            width = 1 if op == 0x68 else 4
            if pos + width > size:
                status = 2
                break
            index = _uint(data, pos, width)
            pos += width
            if index >= memo_kind.shape[0] or memo_kind[index] < 0:
                status = 2
                break
            push_kind = memo_kind[index]
            push_val = memo_val[index]
        elif op == 0x94 or op == 0x71 or op == 0x72:  # MEMOIZE, BINPUT, LONG_BINPUT
            if sp == 0:
                status = 4
                break
            if op == 0x94:
                index = nmemo
            else:
                width = 1 if op == 0x71 else 4
                if pos + width > size:
                    status = 2
                    break
                index = _uint(data, pos, width)
                pos += width
            if index >= memo_kind.shape[0]:
                pos = at
                status, need = GROW + T_MEMO, index + 1
                break
            if op == 0x94:
                nmemo += 1
            memo_kind[index] = st_kind[sp - 1]
            memo_val[index] = st_val[sp - 1]
        elif op == 0x28:  # MARK
            if mp + 1 >= cap_marks:
                pos = at
                status, need = GROW + T_MARKS, mp + 1
                break
            marks[mp] = sp
            mp += 1
        elif op == 0x7D:  # EMPTY_DICT
            if ndict >= dict_keys.shape[0]:
                pos = at
                status, need = GROW + T_DICT, ndict + 1
                break
            dict_keys[ndict] = 0
            for slot in range(dict_kind.shape[1]):
                dict_kind[ndict, slot] = -1
                dict_val[ndict, slot] = 0
            push_kind, push_val = K_DICT, ndict
            ndict += 1
        elif op == 0x5D:  # EMPTY_LIST
            if nlist >= list_user.shape[0]:
                pos = at
                status, need = GROW + T_LIST, nlist + 1
                break
            list_user[nlist] = -1
            list_start[nlist] = 0
            list_count[nlist] = 0
            push_kind, push_val = K_LIST, nlist
            nlist += 1
        elif op == 0x73 or op == 0x75:  # SETITEM / SETITEMS
            if op == 0x73:
                lo = sp - 2
            else:
                if mp == 0:
                    status = 4
                    break
                lo = marks[mp - 1]
            if lo < 1 or lo > sp or (sp - lo) % 2 != 0 or st_kind[lo - 1] != K_DICT:
                status = 4
                break
            if op == 0x75:
                mp -= 1
            d = st_val[lo - 1]
            for j in range(lo, sp, 2):
                if st_kind[j] != K_STR:
                    continue
                s = st_val[j]
                if str_slot[s] == -2:
                    str_slot[s] = _key_index(data, str_off[s], str_len[s], key_bytes, key_off)
                k = str_slot[s]
                if k >= 0:
                    bit = np.int32(1) << np.int32(k)
                    slot = key_slot[k]
                    if dict_kind[d, slot] != -1 and (dict_keys[d] & bit) == 0:
                        dict_keys[d] |= np.int32(CONFLICT)  # two tracked keys met in one slot
                    dict_keys[d] |= bit
                    dict_kind[d, slot] = st_kind[j + 1]
                    dict_val[d, slot] = st_val[j + 1]
            sp = lo
        elif op == 0x61 or op == 0x65:  # APPEND / APPENDS
            if op == 0x61:
                lo = sp - 1
            else:
                if mp == 0:
                    status = 4
                    break
                lo = marks[mp - 1]
            if lo < 1 or lo > sp or st_kind[lo - 1] != K_LIST:
                status = 4
                break
            if nedge + (sp - lo) > edge_kind.shape[0]:
                pos = at
                status, need = GROW + T_EDGE, nedge + (sp - lo)
                break
            if op == 0x65:
                mp -= 1
            li = st_val[lo - 1]
            for j in range(lo, sp):
                kind = st_kind[j]
                val = st_val[j]
                list_count[li] += 1
                if kind == K_DICT and (dict_keys[val] & filename_bit) != 0:
                    # A frame: of a list of frames only the first outside the libraries is kept.
                    if list_user[li] == -1 and dict_kind[val, 0] == K_STR:
                        f = dict_val[val, 0]
                        if str_lib[f] == -1:
                            str_lib[f] = 1 if _is_library(data, str_off[f], str_len[f], lib_bytes, lib_off) else 0
                        if str_lib[f] == 0:
                            list_user[li] = val
                else:
                    edge_parent[nedge] = li
                    edge_kind[nedge] = kind
                    edge_val[nedge] = val
                    list_start[li] = 1
                    nedge += 1
            sp = lo
        elif op == 0x8C or op == 0x58 or op == 0x8D or op == 0x43 or op == 0x42 or op == 0x8E:
            # SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, SHORT_BINBYTES, BINBYTES, BINBYTES8
            if nstr >= str_off.shape[0]:
                pos = at
                status, need = GROW + T_STR, nstr + 1
                break
            width = 1 if (op == 0x8C or op == 0x43) else (4 if (op == 0x58 or op == 0x42) else 8)
            if pos + width > size:
                status = 2
                break
            n = _uint(data, pos, width)
            pos += width
            if n < 0 or n > size - pos:
                status = 2
                break
            str_off[nstr] = pos
            str_len[nstr] = n
            str_slot[nstr] = -2
            str_lib[nstr] = -1
            push_kind = K_STR if (op == 0x8C or op == 0x58 or op == 0x8D) else K_BYTES
            push_val = nstr
            nstr += 1
            pos += n
        elif op == 0x4B or op == 0x4D:  # BININT1, BININT2
            width = 1 if op == 0x4B else 2
            if pos + width > size:
                status = 2
                break
            push_kind, push_val = K_INT, _uint(data, pos, width)
            pos += width
        elif op == 0x4A:  # BININT (signed 32 bits)
            if pos + 4 > size:
                status = 2
                break
            v = _uint(data, pos, 4)
            if v >= 2**31:
                v -= 2**32
            push_kind, push_val = K_INT, v
            pos += 4
        elif op == 0x8A:  # LONG1 (little-endian two's complement)
            if pos + 1 > size:
                status = 2
                break
            n = np.int64(data[pos])
            pos += 1
            if n > 8:
                status = 3
                break
            if pos + n > size:
                status = 2
                break
            v = _uint(data, pos, n)
            if 0 < n < 8 and data[pos + n - 1] >= 0x80:
                v -= np.int64(1) << np.int64(8 * n)
            push_kind, push_val = K_INT, v
            pos += n
        elif op == 0x47:  # BINFLOAT (big-endian double): kept as its bits
            if pos + 8 > size:
                status = 2
                break
            v = np.int64(0)
            for i in range(8):
                v = (v << np.int64(8)) | np.int64(data[pos + i])
            push_kind, push_val = K_FLOAT, v
            pos += 8
        elif op == 0x4E:  # NONE
            push_kind = K_NONE
        elif op == 0x88 or op == 0x89:  # NEWTRUE / NEWFALSE
            push_kind, push_val = K_BOOL, (1 if op == 0x88 else 0)
        elif op == 0x29:  # EMPTY_TUPLE (tuple contents are not kept)
            push_kind = K_TUPLE
        elif op == 0x74 or op == 0x85 or op == 0x86 or op == 0x87:  # TUPLE, TUPLE1-3
            if op == 0x74:
                if mp == 0 or marks[mp - 1] > sp:
                    status = 4
                    break
                mp -= 1
                sp = marks[mp]
            else:
                n = np.int64(op) - 0x84
                if sp < n:
                    status = 4
                    break
                sp -= n
            push_kind = K_TUPLE
        elif op == 0x80:  # PROTO
            pos += 1
        elif op == 0x95:  # FRAME
            pos += 8
        elif op == 0x2E:  # STOP
            if sp != 1:
                status = 4
                break
            state[S_ROOT_KIND] = st_kind[0]
            state[S_ROOT_VAL] = st_val[0]
            status = DONE
            break
        else:
            pos = at
            status = 1
            break
        if push_kind >= 0:
            st_kind[sp] = push_kind
            st_val[sp] = push_val
            sp += 1
    state[S_POS], state[S_SP], state[S_MP] = pos, sp, mp
    state[S_MEMO], state[S_STR], state[S_DICT], state[S_LIST], state[S_EDGE] = nmemo, nstr, ndict, nlist, nedge
    state[S_NEED] = need
    return status


class ScanStopped(ValueError):
    """The pickle holds something this reader leaves to the restricted unpickler."""


def _fill(a: np.ndarray) -> int:
    return -1 if a.dtype == np.int8 and a.ndim == 2 else 0  # dict slot kinds start unset


def _grown(a: np.ndarray, need: int, fill: int, exact: bool = False) -> np.ndarray:
    b = np.full((need if exact else max(need, 2 * len(a)), *a.shape[1:]), fill, dtype=a.dtype)
    b[: len(a)] = a
    return b


def _forget(data: np.ndarray, upto: int) -> None:
    """Let the kernel drop the file's pages already scanned (they are read again from the
    page cache if a string there is looked at): the file does not sit in this process's RSS."""
    mm = getattr(data, "_mmap", None)
    upto -= upto % mmap.PAGESIZE
    if mm is not None and upto > 0 and hasattr(mm, "madvise"):
        mm.madvise(mmap.MADV_DONTNEED, 0, upto)


def scan(path: Path, on_progress: Callable[[float], None] | None = None) -> Scan:
    """Scan a snapshot pickle (memory-mapped: its pages are the file's, not the heap's);
    ``on_progress`` hears the fraction of bytes read every 16 MiB."""
    data = np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else np.zeros(0, np.uint8)
    # Tables by what they hold; each grows (doubling) when the scan says it is full.
    guess = max(1024, len(data) // 128)
    tables = [
        [np.zeros(1024, np.int8), np.zeros(1024, np.int64)],  # stack
        [np.zeros(256, np.int64)],  # marks
        [np.full(guess, -1, np.int8), np.zeros(guess, np.int64)],  # memo
        [np.zeros(1024, np.int64), np.zeros(1024, np.int64), np.zeros(1024, np.int8), np.zeros(1024, np.int8)],
        [np.zeros(guess, np.int32), np.full((guess, SLOTS), -1, np.int8), np.zeros((guess, SLOTS), np.int64)],
        [np.zeros(guess, np.int32), np.zeros(guess, np.int8), np.zeros(guess, np.int32)],  # lists
        [np.zeros(guess, np.int64), np.zeros(guess, np.int8), np.zeros(guess, np.int64)],  # edges
    ]
    fills = {T_MEMO: -1}
    state = np.zeros(11, np.int64)
    step = 16 << 20
    pause_at = step
    while True:
        flat = [a for group in tables for a in group]
        status = _scan(
            data, _KEY_BYTES, _KEY_OFF, _KEY_SLOT, _LIB_BYTES, _LIB_OFF, _FILENAME_BIT, state, pause_at, *flat
        )
        if status == DONE:
            break
        if status == PAUSE:
            pos = int(state[S_POS])
            if on_progress:
                on_progress(pos / len(data))
            # What the first megabytes hold says how big the tables will be: size them once.
            for table, counter in ((T_MEMO, S_MEMO), (T_DICT, S_DICT), (T_LIST, S_LIST), (T_EDGE, S_EDGE)):
                projected = int(state[counter] * len(data) / pos * 1.05) + 1024
                if projected > len(tables[table][0]):
                    tables[table] = [
                        _grown(a, projected, fills.get(table, _fill(a)), exact=True) for a in tables[table]
                    ]
            _forget(data, pos)
            pause_at += step
            continue
        if status < GROW:
            raise ScanStopped(f"{STOP_REASONS[status]} (byte {int(state[S_POS])})")
        table = status - GROW
        need = int(state[S_NEED])
        tables[table] = [
            _grown(a, need, fills.get(table, -1 if a.dtype == np.int8 and a.ndim == 2 else 0)) for a in tables[table]
        ]
    n = {k: int(state[k]) for k in (S_STR, S_DICT, S_LIST, S_EDGE)}
    strs, dicts, lists, edges = tables[T_STR], tables[T_DICT], tables[T_LIST], tables[T_EDGE]
    return Scan(
        data,
        int(state[S_ROOT_KIND]),
        int(state[S_ROOT_VAL]),
        strs[0][: n[S_STR]],
        strs[1][: n[S_STR]],
        dicts[0][: n[S_DICT]],
        dicts[1][: n[S_DICT]],
        dicts[2][: n[S_DICT]],
        lists[0][: n[S_LIST]],
        lists[1][: n[S_LIST]],
        lists[2][: n[S_LIST]],
        edges[0][: n[S_EDGE]],
        edges[1][: n[S_EDGE]],
        edges[2][: n[S_EDGE]],
    )


# --- from the scan to allocation intervals -------------------------------------------------

A_OTHER, A_ALLOC, A_FREE, A_OOM = 0, 1, 2, 3
_ACTION_NAMES = ("alloc", "free", "free_requested", "free_completed", "oom")
_ACTION_BYTES = np.frombuffer(b"".join(a.encode() for a in _ACTION_NAMES), dtype=np.uint8)
_ACTION_OFF = np.cumsum([0] + [len(a) for a in _ACTION_NAMES]).astype(np.int64)


@numba.njit(cache=True)
def _trace_columns(
    data, entries, str_off, str_len, dict_keys, dict_kind, dict_val, list_user, action_bytes, action_off
):
    """Per trace entry: which action (index into _ACTION_NAMES, -1 other), addr, size, time
    (int or float bits, and which), the innermost user frame (a dict number) and device_free."""
    n = entries.shape[0]
    action = np.full(n, -1, np.int8)
    addr = np.zeros(n, np.int64)
    size = np.zeros(n, np.int64)
    t = np.zeros(n, np.float64)
    frame = np.full(n, -1, np.int64)
    device_free = np.full(n, -1, np.int64)
    missing_time = 0
    cache_s = np.full(str_off.shape[0], -2, np.int64)
    for i in range(n):
        d = entries[i]
        if dict_kind[d, 0] == K_STR:
            s = dict_val[d, 0]
            if cache_s[s] == -2:
                cache_s[s] = -1
                for a in range(action_off.shape[0] - 1):
                    lo, hi = action_off[a], action_off[a + 1]
                    if hi - lo == str_len[s]:
                        same = True
                        for b in range(hi - lo):
                            if data[str_off[s] + b] != action_bytes[lo + b]:
                                same = False
                                break
                        if same:
                            cache_s[s] = a
                            break
            action[i] = cache_s[s]
        if dict_kind[d, 1] == K_INT:
            addr[i] = dict_val[d, 1]
        if dict_kind[d, 2] == K_INT:
            size[i] = dict_val[d, 2]
        if dict_kind[d, 3] == K_INT:
            t[i] = dict_val[d, 3]
        elif dict_kind[d, 3] == K_FLOAT:
            t[i] = dict_val[d, 3:4].view(np.float64)[0]
        else:
            missing_time += 1
        if dict_kind[d, 4] == K_LIST:
            frame[i] = list_user[dict_val[d, 4]]
        if dict_kind[d, 5] == K_INT:
            device_free[i] = dict_val[d, 5]
    return action, addr, size, t, frame, device_free, missing_time


@numba.njit(cache=True)
def _pair(order, action, addr, size, t, frame, alloc_code, free_code, t_first, t_end):
    """Allocation intervals as memory_viz pairs them (see snapshot.parse_cuda_snapshot), the
    entries visited by address (``order``: a stable argsort of ``addr``):
    returns start, end, size, frame (entry frames), addr and whether each was allocated in
    the trace; plus the addresses the trace allocated."""
    n = action.shape[0]
    out_start = np.empty(n, np.float64)
    out_end = np.empty(n, np.float64)
    out_size = np.empty(n, np.int64)
    out_frame = np.empty(n, np.int64)
    out_addr = np.empty(n, np.int64)
    out_alloc_t = np.empty(n, np.float64)  # the time whose phase categorises it
    m = 0
    i = 0
    while i < n:
        a = addr[order[i]]
        open_e = -1
        while i < n and addr[order[i]] == a:
            e = order[i]
            if action[e] == alloc_code:
                open_e = e  # an alloc over a live one replaces it, as a dict assignment does
            elif action[e] == free_code:
                if open_e >= 0:
                    out_start[m], out_end[m], out_size[m] = t[open_e], t[e], size[open_e]
                    out_frame[m], out_alloc_t[m] = frame[open_e], t[open_e]
                    open_e = -1
                else:  # allocated before the trace began
                    out_start[m], out_end[m], out_size[m] = t_first, t[e], size[e]
                    out_frame[m], out_alloc_t[m] = frame[e], t_first
                out_addr[m] = a
                m += 1
            i += 1
        if open_e >= 0:  # still allocated when the trace ends
            out_start[m], out_end[m], out_size[m] = t[open_e], t_end, size[open_e]
            out_frame[m], out_alloc_t[m], out_addr[m] = frame[open_e], t[open_e], a
            m += 1
    return out_start[:m], out_end[:m], out_size[:m], out_frame[:m], out_addr[:m], out_alloc_t[:m]
