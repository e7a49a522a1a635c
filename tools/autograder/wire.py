"""The autograder's wire format: values between the grader and the child process that runs
student code.

Only data crosses: None, bools, ints, floats, strings, lists, tuples, dicts, and numpy
arrays and numbers of numeric dtypes. Nothing is unpickled, so no message can run code in
the grader. A message is an 8-byte length and JSON, then each array's bytes (8-byte length
and the raw buffer).

Lists and dicts keep their identity: each one sent gets a number, and after a call the
child sends back what those containers hold, so a function that changes its arguments in
place (take_batch removes from `finished` and sets each response's "lag") does so in the
grader too. Example: the grader sends take_batch([a, b], ...) with a, b dicts numbered 1, 2
in list 0; the child answers "result: (list [ref 1], list []); state: 0 = [ref 2],
1 = {..., lag: 0}, 2 = {...}".
"""

import json
import struct
import time

import numpy as np

MAX_BYTES = 400_000_000  # a message larger than this is refused (an answer, not a dump)
KINDS = "biuf"  # numpy dtype kinds allowed: bool, int, unsigned, float
ATOMS = {bool, int, float, str}  # the types sent as themselves (exactly these, no subclasses)


class WireError(Exception):
    """A message that is not in the wire format (or a value that cannot be sent)."""


class TooLarge(WireError):
    """A message larger than the receiver accepts; it is refused before it is read."""


class TooMuchText(TooLarge):
    """A message with more JSON than the receiver accepts now; it is read (so the next
    message is read from its start) but not decoded."""


class TooManyValues(TooMuchText):
    """A message that holds more values than the receiver accepts, counted as a tree (a
    container shared by k places counts k times): read whole, then refused whole."""


class Encoder:
    """Turns values into JSON-able trees; containers are numbered by identity in `table`."""

    def __init__(self, table=None):
        self.table = table if table is not None else {}  # id(container) -> (number, container)
        self.blobs = []
        self.arrays = []  # the array each blob came from (None for a numpy number)

    def __call__(self, value, depth=0):
        kind = type(value)
        if value is None or kind in ATOMS:  # the common case first: a million calls take 1 s
            return value
        if depth > 50:
            raise WireError("a value nested more than 50 levels deep")
        if kind is tuple:
            return {"tuple": [self(v, depth + 1) for v in value]}
        if kind is list or kind is dict:
            if id(value) in self.table:
                return {"ref": self.table[id(value)][0]}
            number = len(self.table)
            self.table[id(value)] = (number, value)
            if kind is list:
                return {"list": number, "items": [self(v, depth + 1) for v in value]}
            return {
                "dict": number,
                "items": [[self(k, depth + 1), self(v, depth + 1)] for k, v in value.items()],
            }
        if isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            if array.dtype.kind not in KINDS:
                raise WireError(f"a numpy array of dtype {array.dtype}")
            self.blobs.append(np.ascontiguousarray(array).tobytes())
            self.arrays.append(value if isinstance(value, np.ndarray) else None)
            return {
                "nd": [
                    array.dtype.str,
                    list(array.shape),
                    len(self.blobs) - 1,
                    isinstance(value, np.generic),
                    not array.flags.writeable,
                ]
            }
        raise WireError(f"a value of type {type(value).__name__}")

    def contents(self, numbers):
        """[number, items] for the numbered containers: what they hold now."""
        by_number = {n: obj for n, obj in self.table.values()}
        state = []
        for n in numbers:
            obj = by_number[n]
            items = (
                [self(v, 1) for v in obj]
                if type(obj) is list
                else [[self(k, 1), self(v, 1)] for k, v in obj.items()]
            )
            state.append([n, items])
        return state


class Decoder:
    """Turns trees back into values; `objects` maps container numbers to existing objects,
    which are reused (and changed in place) instead of copied.

    `node` turns one JSON object of a tree into its value, once its insides are values:
    json.loads calls it as each object ends (receive), so an answer is built as it is read,
    with no tree in between: decoding costs time and memory in proportion to the bytes,
    about 1 s and 50 MB for a million tiny containers."""

    def __init__(self, blobs, objects=None, value_limit=None):
        self.blobs = blobs
        self.objects = objects if objects is not None else {}
        self.arrays = []  # (blob index, array) for each array made, to see changes in place
        self.value_limit = value_limit  # the most values (see values_in) a message may hold
        self.made = 0  # values made so far: containers, and the elements of arrays

    def __call__(self, tree):
        """The value of a tree that is already JSON-decoded (the same as receive's)."""
        if type(tree) is list:
            return [self(v) for v in tree]
        if type(tree) is dict:
            return self.node({k: self(v) for k, v in tree.items()})
        return tree

    def node(self, tree):
        self.made += 1
        if self.value_limit is not None and self.made > self.value_limit:
            raise TooManyValues(f"a message of more than {self.value_limit} values")
        keys = sorted(tree)
        if keys == ["nd"]:
            dtype, shape, index, scalar, read_only = tree["nd"]
            dtype = np.dtype(dtype)
            if dtype.kind not in KINDS:
                raise WireError(f"a numpy array of dtype {dtype}")
            array = np.frombuffer(self.blobs[index], dtype=dtype).reshape(shape)
            self.made += array.size  # before the copy: a blob named a thousand times is not
            if self.value_limit is not None and self.made > self.value_limit:  # a thousand copies
                raise TooManyValues(f"a message of more than {self.value_limit} values")
            array = array.copy()
            if scalar:
                return array[()]
            array.setflags(write=not read_only)
            self.arrays.append((index, array))
            return array
        if keys == ["tuple"]:
            return tuple(tree["tuple"])
        if keys == ["ref"]:
            return self.objects[tree["ref"]]
        if keys == ["items", "list"]:
            return self.fill(tree["list"], [], tree["items"])
        if keys == ["dict", "items"]:
            return self.fill(tree["dict"], {}, tree["items"])
        if "id" in tree:  # a whole message
            return tree
        raise WireError("an unknown value")

    def fill(self, number, empty, items):
        """Container `number` (an existing one, or `empty`) holding `items` from now on."""
        obj = self.objects.setdefault(number, empty)
        if type(obj) is list:
            obj[:] = items
        else:
            obj.clear()
            obj.update((key, value) for key, value in items)
        return obj

    def changed(self):
        """[blob index, array] for each array made whose contents changed since."""
        return [
            [index, array] for index, array in self.arrays if array.tobytes() != self.blobs[index]
        ]

    def update(self, state):
        """Put the contents the other side reported ([number, items] with items decoded)
        into the numbered containers, in place."""
        for number, items in state:
            obj = self.objects[number]
            self.fill(number, obj, items)


def pack(message, blobs=()):
    """One message (a JSON-able dict) and its array buffers, as bytes to send. A ValueError
    (an int of 5,000 digits, say) before anything is sent."""
    data = json.dumps(message, separators=(",", ":")).encode()
    parts = [struct.pack(">Q", len(data)), data, struct.pack(">Q", len(blobs))]
    for blob in blobs:
        parts += [struct.pack(">Q", len(blob)), blob]
    return b"".join(parts)


def send(stream, message, blobs=()):
    """Write one message and its array buffers to a binary stream."""
    stream.write(pack(message, blobs))
    stream.flush()


def _read_exactly(read, n, budget):
    if n > budget[0]:
        raise TooLarge(f"a message of more than {budget[1]} bytes")
    budget[0] -= n
    chunks = []
    while n:
        chunk = read(n)
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def values_in(value, limit):
    """How many values `value` holds as a tree, as a test walking it meets them: each
    number, string and container once for each place it appears (a list shared by two
    places twice, so 41 lists can stand for 2**41 numbers), and each element of an
    array; counted without recursion, and only up to `limit` + 1 (a cycle stops there).

    Example: a = [0.5, 0.5]; values_in([a, a, (1, "x")], 100) = 1 + 2 * 3 + 3 = 10."""
    count, stack = 0, [value]
    while stack and count <= limit:
        value = stack.pop()
        kind = type(value)
        count += value.size if kind is np.ndarray else 1
        if kind is list or kind is tuple:
            stack.extend(value)
        elif kind is dict:
            stack.extend(value)
            stack.extend(value.values())
    return count


def receive(read, limit=MAX_BYTES, objects=None, text_limit=MAX_BYTES, value_limit=None):
    """Read one message of at most `limit` bytes, of which at most `text_limit` are JSON
    (not arrays), with `read(n)` (returns up to n bytes); returns (message, decoder): the
    message with its values decoded as it is parsed (containers numbered in `objects`
    reused), and the Decoder that made them (its `text`: the bytes of JSON, its `values`:
    values_in the message). TooManyValues, once it is read whole, if it holds more than
    `value_limit` values."""
    budget = [min(limit, MAX_BYTES), min(limit, MAX_BYTES)]  # bytes left, the limit
    (size,) = struct.unpack(">Q", _read_exactly(read, 8, budget))
    data = _read_exactly(read, size, budget)
    (count,) = struct.unpack(">Q", _read_exactly(read, 8, budget))
    if count > 100_000:
        raise WireError("too many arrays in one message")
    blobs = []
    for _ in range(count):
        (size,) = struct.unpack(">Q", _read_exactly(read, 8, budget))
        blobs.append(_read_exactly(read, size, budget))
    if len(data) > text_limit:
        raise TooMuchText(f"a message of more than {text_limit} bytes of JSON")
    decoder = Decoder(blobs, objects, value_limit)
    started = time.perf_counter()
    try:
        message = json.loads(data, object_hook=decoder.node)
    except RecursionError:
        raise WireError("a value nested too deep") from None
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise WireError(f"a malformed value ({type(error).__name__}: {error})") from None
    if type(message) is not dict or "id" not in message:
        raise WireError("a message that is not a dict with an id")
    decoder.values = values_in(message, value_limit or MAX_BYTES)
    if value_limit is not None and decoder.values > value_limit:
        raise TooManyValues(f"a message of more than {value_limit} values")
    decoder.seconds, decoder.size = time.perf_counter() - started, budget[1] - budget[0]
    decoder.text = len(data)
    return message, decoder
