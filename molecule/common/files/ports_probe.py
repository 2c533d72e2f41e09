"""The intruder drill's eyes (standard library only, run with `python3 -c` where it looks from).

  listening PID             the TCP ports something listens on outside loopback, in PID's network namespace
                            (/proc/PID/net/tcp and tcp6, read from the host: the kernel's proc_net_tcp.rst format)
  probe TIMEOUT ADDR:PORT.. a TCP connection to each, all at once: {"ADDR:PORT": "open" | "refused" | "timeout" | ...}
  post TIMEOUT URL CMD      a job POSTed to a dashboard agent's job API (what the issue's intruder did):
                            {"status": HTTP status} or {"error": why no answer came}
Each prints one JSON document.
"""

import json
import socket
import sys
import threading
import urllib.error
import urllib.request


def listening(pid):
    ports = set()
    for name, width in (("tcp", 8), ("tcp6", 32)):
        try:
            with open("/proc/%s/net/%s" % (pid, name), encoding="ascii") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != "0A":  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            assert len(address) == width, line
            # loopback: 127.x.x.x is 0100007F-style (little-endian words), ::1 and ::ffff:127.x likewise
            if width == 8 and address.endswith("7F"):
                continue
            if width == 32 and (address == "00000000000000000000000001000000"
                                or (address[:24] == "0000000000000000FFFF0000" and address.endswith("7F"))):
                continue
            ports.add(int(port, 16))
    return sorted(ports)


def probe(timeout, targets):
    out = {}

    def one(target):
        host, port = target.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            out[target] = "open"
        except ConnectionRefusedError:
            out[target] = "refused"
        except socket.timeout:
            out[target] = "timeout"
        except OSError as err:
            out[target] = "error: %s" % err

    threads = [threading.Thread(target=one, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def post(timeout, url, command):
    body = json.dumps({"entrypoint": command, "submission_id": "drill-%s" % abs(hash((url, command)))}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return {"status": answer.status}
    except urllib.error.HTTPError as err:
        return {"status": err.code}
    except (OSError, socket.timeout) as err:
        return {"error": str(getattr(err, "reason", err))}


def main(argv):
    if argv[0] == "listening":
        result = listening(argv[1])
    elif argv[0] == "probe":
        result = probe(float(argv[1]), argv[2:])
    else:
        result = post(float(argv[1]), argv[2], argv[3])
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
