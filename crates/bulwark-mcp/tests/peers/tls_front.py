"""A TLS front for a plain-HTTP server: what an operator puts before an MCP server to serve
it as https://. Terminates TLS with the given certificate on a free loopback port and
relays the bytes of each connection to 127.0.0.1:UPSTREAM_PORT. Writes its port to
PORT_FILE once it listens, and the number of connections it has accepted to
PORT_FILE.connections as they come.

    python tls_front.py CERT KEY UPSTREAM_PORT PORT_FILE
"""
import os
import socket
import ssl
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, context, upstream_port):
    try:
        tls = context.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        conn.close()
        return
    try:
        plain = socket.create_connection(("127.0.0.1", upstream_port))
    except OSError:
        tls.close()
        return
    for s in (tls, plain):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=pump, args=(plain, tls), daemon=True).start()
    pump(tls, plain)


def main():
    cert, key, upstream_port, port_file = sys.argv[1:5]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.replace(port_file + ".tmp", port_file)
    accepted = 0
    while True:
        conn, _ = listener.accept()
        accepted += 1
        with open(port_file + ".connections.tmp", "w") as f:
            f.write(str(accepted))
        os.replace(port_file + ".connections.tmp", port_file + ".connections")
        threading.Thread(target=serve, args=(conn, context, int(upstream_port)),
                         daemon=True).start()


if __name__ == "__main__":
    main()
