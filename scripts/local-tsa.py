#!/usr/bin/env python3
"""A local RFC 3161 time-stamping authority for the tests, made of Debian's `openssl ts`.

    scripts/local-tsa.py FOLDER

creates a throw-away CA and a time-stamping certificate in FOLDER (ca.pem, tsa.pem), then answers POSTed
time-stamp queries on a free loopback port with `openssl ts -reply`, and prints `listening on PORT` once ready.
Verify an answer with: openssl ts -verify -data TEXT -in ANSWER.tsr -CAfile FOLDER/ca.pem
"""
import http.server
import os
import subprocess
import sys
import tempfile

folder = os.path.abspath(sys.argv[1])
os.makedirs(folder, exist_ok=True)


def openssl(*args):
    subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)


CONFIG = """
[ tsa ]
default_tsa = local
[ local ]
dir = {folder}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.pem
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256
accuracy = secs:1
ess_cert_id_alg = sha256
"""

if not os.path.exists(os.path.join(folder, "tsa.pem")):
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Rerun Gate test CA")
    openssl("req", "-new", *ec, "-keyout", "tsa.key", "-out", "tsa.csr", "-subj", "/CN=Rerun Gate test TSA")
    with open(os.path.join(folder, "tsa.ext"), "w") as ext:
        ext.write("extendedKeyUsage = critical, timeStamping\n")
    openssl("x509", "-req", "-in", "tsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "tsa.pem", "-days", "2", "-extfile", "tsa.ext")
    with open(os.path.join(folder, "tsa.cnf"), "w") as cnf:
        cnf.write(CONFIG.format(folder=folder))
    with open(os.path.join(folder, "serial"), "w") as serial:
        serial.write("01\n")


class Authority(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        query = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "q.tsq"), "wb") as q:
                q.write(query)
            done = subprocess.run(["openssl", "ts", "-reply", "-config", "tsa.cnf", "-queryfile",
                                   os.path.join(work, "q.tsq"), "-out", os.path.join(work, "r.tsr")],
                                  cwd=folder, capture_output=True)
            if done.returncode != 0:
                self.send_error(400, done.stderr.decode(errors="replace")[:200])
                return
            answer = open(os.path.join(work, "r.tsr"), "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Authority)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
