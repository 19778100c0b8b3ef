#!/usr/bin/env python3
"""Play systemd's side of sd_notify for a test: receive datagrams on an AF_UNIX socket and
append each to a file, one assignment a line, the sender's pid first ("PID=123") and "--"
after it. ADDRESS is a path, or an abstract name written with a leading '@' (as in
$NOTIFY_SOCKET). The file exists, empty, once the socket is bound.

usage: notify_listen.py ADDRESS OUTPUT
"""
import socket
import struct
import sys


def main():
    address, output = sys.argv[1], sys.argv[2]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.bind("\0" + address[1:] if address.startswith("@") else address)
    creds_size = struct.calcsize("3i")
    with open(output, "w", buffering=1, encoding="utf-8") as out:
        while True:
            data, ancillary, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(creds_size))
            pid = "?"
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = str(struct.unpack("3i", value[:creds_size])[0])
            lines = ["PID=" + pid] + data.decode("utf-8", "replace").split("\n") + ["--"]
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
