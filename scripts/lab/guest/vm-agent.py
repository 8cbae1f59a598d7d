#!/usr/bin/env python3
"""Command agent of the lab guest (started by /sbin/vm-init on the virtio-serial port vm.cmd).

Protocol: one JSON object per line each way. The port is a plain character device, not a tty, so
there is no echo, no line editing and no CR/LF translation to undo.

  host -> guest  {"id": 7, "op": "run", "argv": ["multipath", "-ll"]}            (argv, no shell)
                 {"id": 8, "op": "run", "script": "echo hi; exit 3", "stdin": "", "timeoutMs": 5000}
                 {"id": 9, "op": "ping"}          {"op": "poweroff"}
  guest -> host  {"event": "ready", "uptime": 9.8, "kernel": "6.1.0-..."}          (once, at start)
                 {"id": 7, "code": 0, "signal": null, "timedOut": false, "stuckPids": [],
                  "stdout": "<base64>", "stderr": "<base64>", "ms": 41}

Output is base64 so any byte survives. Commands run concurrently, each in its own session
(process group). On timeout the group gets SIGKILL; a process that stays (D state on a queued
multipath map cannot die until its I/O completes) is reported in stuckPids and not waited for.
"""
import base64, json, os, signal, subprocess, sys, tempfile, threading, time

MAX_OUT = 8 * 1024 * 1024
port_path = sys.argv[1]
fd = os.open(port_path, os.O_RDWR)
write_lock = threading.Lock()


def send(obj):
    data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    with write_lock:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]


def read_capped(f):
    f.seek(0)
    data = f.read(MAX_OUT + 1)
    if len(data) > MAX_OUT:
        data = data[:MAX_OUT] + b"\n[vm-agent: output truncated]\n"
    return base64.b64encode(data).decode()


def group_pids(pgid):
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as s:
                fields = s.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                pids.append(int(p))
        except (OSError, IndexError, ValueError):
            pass
    return pids


def run(req):
    start = time.monotonic()
    rid = req.get("id")
    if req.get("argv"):
        argv = [str(a) for a in req["argv"]]
    else:
        argv = ["/bin/bash", "-c", req.get("script") or ""]
    timeout = req.get("timeoutMs") or 60000
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    stdin = subprocess.DEVNULL
    if req.get("stdin") is not None:
        stdin = tempfile.TemporaryFile()
        stdin.write(req["stdin"].encode())
        stdin.seek(0)
    res = {"id": rid, "code": None, "signal": None, "timedOut": False, "stuckPids": []}
    try:
        proc = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=err, start_new_session=True,
                                env={**os.environ, "TERM": "dumb"})
    except OSError as e:
        res.update(code=127, stdout="", stderr=base64.b64encode(f"vm-agent: {e}\n".encode()).decode(),
                   ms=int((time.monotonic() - start) * 1000))
        send(res)
        return
    try:
        rc = proc.wait(timeout=timeout / 1000)
    except subprocess.TimeoutExpired:
        res["timedOut"] = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            rc = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            rc = None
            # Reap it whenever its I/O finally completes; never block the reply on it.
            threading.Thread(target=proc.wait, daemon=True).start()
        res["stuckPids"] = group_pids(proc.pid)
    if rc is not None:
        if rc < 0:
            res["signal"] = signal.Signals(-rc).name
        else:
            res["code"] = rc
    res["stdout"] = read_capped(out)
    res["stderr"] = read_capped(err)
    res["ms"] = int((time.monotonic() - start) * 1000)
    send(res)


def handle(line):
    try:
        req = json.loads(line)
    except ValueError:
        send({"event": "error", "message": "bad json", "line": line[:200].decode(errors="replace")})
        return
    op = req.get("op")
    if op == "run":
        threading.Thread(target=run, args=(req,), daemon=True).start()
    elif op == "ping":
        send({"id": req.get("id"), "code": 0, "stdout": "", "stderr": "", "ms": 0})
    elif op == "poweroff":
        os.sync()
        with open("/proc/sysrq-trigger", "w") as t:
            t.write("o")
    else:
        send({"id": req.get("id"), "event": "error", "message": f"unknown op {op!r}"})


with open("/proc/uptime") as u:
    uptime = float(u.read().split()[0])
send({"event": "ready", "uptime": uptime, "kernel": os.uname().release})
buf = b""
while True:
    chunk = os.read(fd, 65536)
    if not chunk:
        # The host end is not connected (or went away): wait for it instead of spinning.
        time.sleep(0.2)
        continue
    buf += chunk
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        if line.strip():
            handle(line)
