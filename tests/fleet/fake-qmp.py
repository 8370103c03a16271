#!/usr/bin/env python3
# A stand-in for QEMU's QMP server (-qmp unix:PATH,server=on) for the fleet tests:
# like QEMU, serves one client at a time and accepts the next when it goes; greets,
# answers qmp_capabilities, and sends GUEST_PANICKED once the file PANIC exists (the
# test creates it when its synthetic guest has "crashed").
import json, os, select, socket, sys, time

path, panic = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
if os.path.exists(path):
    os.unlink(path)
srv.bind(path)
srv.listen(1)
greeting = {"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 0}},
                    "capabilities": []}}


def serve(conn):
    conn.sendall((json.dumps(greeting) + "\r\n").encode())
    buf = b""
    while b"qmp_capabilities" not in buf:
        data = conn.recv(4096)
        if not data:
            return
        buf += data
    conn.sendall(b'{"return": {}}\r\n')
    sent = False
    while True:
        r, _, _ = select.select([conn], [], [], 0.05)
        if r and not conn.recv(4096):
            return  # the client went away
        if not sent and os.path.exists(panic):
            now = time.time()
            ev = {"timestamp": {"seconds": int(now),
                                "microseconds": int(now * 1e6) % 1000000},
                  "event": "GUEST_PANICKED", "data": {"action": "poweroff"}}
            conn.sendall((json.dumps(ev) + "\r\n").encode())
            sent = True


while True:
    conn, _ = srv.accept()
    try:
        serve(conn)
    except OSError:
        pass
    conn.close()
