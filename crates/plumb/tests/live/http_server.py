# python3 -m http.server, with the congestion control of its connections
# chosen: the lab's namespaces may not be allowed to set the sysctl, and a
# listening socket's TCP_CONGESTION is inherited by the connections it
# accepts. For the path tests (`tests/path.rs`).
# Usage: python3 http_server.py PORT CC  (serves the current directory)
import http.server, socket, sys


class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[2].encode())
        super().server_bind()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


Server(("", int(sys.argv[1])), Quiet).serve_forever()
