#!/usr/bin/env python3
"""Hostile and raw HTTP clients for tests/serve/hostile_test.sh (standard library only).

  stall HOST PORT BODY STALL_S OUT   POSTs BODY (a file) to /v1/query with a small receive
                                     buffer, reads nothing for STALL_S seconds, then reads until
                                     the server closes (at most 30 s more). Writes the dechunked
                                     body to OUT and prints "complete" or "truncated" (the
                                     response ended before its last chunk), and the status code.
  flood HOST PORT N HOLD_S SOURCE    Opens N connections from SOURCE (an address to bind, or "-"),
                                     two thirds idle, one third trickling header bytes (one every
                                     0.5 s); for HOLD_S seconds reopens every one the server
                                     closes (at most 5 a second each). Prints the number of
                                     connections the server closed.
  idle HOST PORT                     Opens a connection, sends nothing; prints the milliseconds
                                     until the server closes it (or "open" after 30 s).
  raw HOST PORT                      Sends standard input, reads until the server closes (at most
                                     10 s); writes what came back to standard output; exit 3
                                     when the connection was still open after 10 s.
"""
import socket
import sys
import time


def connect(host, port, rcvbuf=None, source=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    if source is not None:
        s.bind((source, 0))
    s.connect((host, int(port)))
    return s


def read_until_close(s, limit_s):
    """Everything until EOF; (bytes, closed)."""
    s.settimeout(0.5)
    data = bytearray()
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            b = s.recv(1 << 20)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return bytes(data), True
        if not b:
            return bytes(data), True
        data += b
    return bytes(data), False


def dechunk(raw):
    """(status, body, complete) of one HTTP/1.1 response, chunked or with Content-Length."""
    head_end = raw.find(b"\r\n\r\n")
    if head_end < 0:
        return 0, b"", False
    head = raw[:head_end].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    fields = {}
    for line in head[1:]:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip()
    rest = raw[head_end + 4:]
    if "content-length" in fields:
        n = int(fields["content-length"])
        return status, rest[:n], len(rest) >= n
    body = bytearray()
    pos = 0
    while True:
        eol = rest.find(b"\r\n", pos)
        if eol < 0:
            return status, bytes(body), False
        size = int(rest[pos:eol].split(b";")[0], 16)
        start = eol + 2
        if size == 0:
            return status, bytes(body), True
        chunk = rest[start:start + size]
        body += chunk
        if len(chunk) < size:
            return status, bytes(body), False
        pos = start + size + 2


def stall(host, port, body_file, stall_s, out):
    with open(body_file, "rb") as f:
        body = f.read()
    s = connect(host, port, rcvbuf=4096)
    s.sendall(b"POST /v1/query HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              b"Cache-Control: no-cache\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(float(stall_s))
    raw, _ = read_until_close(s, 30)
    s.close()
    status, got, complete = dechunk(raw)
    with open(out, "wb") as f:
        f.write(got)
    print("complete" if complete else "truncated", status)


def flood(host, port, n, hold_s, source):
    source = None if source == "-" else source
    trickle = b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 4096
    conns = []  # [socket or None, kind, bytes sent, next action time]
    closed = 0

    def open_one(kind):
        try:
            s = connect(host, port, source=source)
        except OSError:
            return None
        s.setblocking(False)
        return s

    for i in range(int(n)):
        kind = "trickle" if i % 3 == 2 else "idle"
        conns.append([open_one(kind), kind, 0, 0.0])
    end = time.monotonic() + float(hold_s)
    while time.monotonic() < end:
        now = time.monotonic()
        for c in conns:
            s, kind, sent, due = c
            if s is None:
                if now >= due:
                    c[0], c[2], c[3] = open_one(kind), 0, now + 0.2
                continue
            try:
                b = s.recv(4096)
                gone = not b  # EOF (a response means the server gave up on it too)
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if not gone and kind == "trickle" and now >= due and sent < len(trickle):
                try:
                    s.send(trickle[sent:sent + 1])
                    c[2] = sent + 1
                    c[3] = now + 0.5
                except BlockingIOError:
                    pass
                except OSError:
                    gone = True
            if gone:
                closed += 1
                s.close()
                c[0], c[3] = None, now + 0.2
        time.sleep(0.05)
    for c in conns:
        if c[0] is not None:
            c[0].close()
    print(closed)


def idle(host, port):
    s = connect(host, port)
    t0 = time.monotonic()
    _, closed = read_until_close(s, 30)
    print(int((time.monotonic() - t0) * 1000) if closed else "open")


def raw(host, port):
    s = connect(host, port)
    s.sendall(sys.stdin.buffer.read())
    data, closed = read_until_close(s, 10)
    sys.stdout.buffer.write(data)
    sys.exit(0 if closed else 3)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"stall": stall, "flood": flood, "idle": idle, "raw": raw}[cmd](*args)


if __name__ == "__main__":
    main()
