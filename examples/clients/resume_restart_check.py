#!/usr/bin/env python3
"""Kills a resume server with SIGKILL in the middle of the Craftsman stage, starts it
again on the same database, and checks what the user sees, with the documented client
(resume_client.py) and the standard library only:

    python3 examples/clients/resume_restart_check.py BINARY WORKDIR [LATENCY_MS] [KILL_AFTER_S]

The session completes; the model calls of both processes add up to those of an
uninterrupted session (at most one call in flight at the kill is repeated); replayed
from event 0 the session has every event once, ids 1, 2, 3, ..., and no stage started
twice. Prints the figures; exits 0 when all hold, 1 otherwise.
"""
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
spec = importlib.util.spec_from_file_location("resume_client", os.path.join(HERE, "resume_client.py"))
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(binary, log, latency, args, env_extra=None):
    """Starts `binary --dry-run` with `args` on a free port, its log in `log`; returns
    the process and its base URL once it listens."""
    port = free_port()
    env = dict(os.environ, RUST_LOG=os.environ.get("CHECK_RUST_LOG", "agent_llm=info,agent_server=info"), NO_COLOR="1",
               **(env_extra or {}))
    process = subprocess.Popen(
        [binary, "--dry-run", "--latency", str(latency), "--port", str(port)] + args,
        stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env, cwd=ROOT)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, "http://127.0.0.1:%d" % port
        except OSError:
            if process.poll() is not None:
                raise SystemExit("the server exited: see " + log)
            time.sleep(0.1)
    raise SystemExit("the server did not start")


def start(base):
    with open(os.path.join(ROOT, "fixtures/resume/resume.txt")) as r, \
            open(os.path.join(ROOT, "fixtures/resume/job.txt")) as j:
        body = {"resume_text": r.read(), "job_description": j.read()}
    code, session = client.call("POST", base + "/api/resume/start", body=body)
    assert code == 201, (code, session)
    return session


def follow(base, session, last_id=0, until=None):
    """Answers every gate as it opens; returns at the end of the session or when
    `until(event)` holds. A gate answered before (a client that reconnected from 0) is
    refused as already answered, which is fine."""
    token = session["token"]
    for event_id, data in client.events(base, session["stream_url"], token, last_id):
        last_id = event_id
        kind = data.get("type")
        if kind == "gate_open":
            code, body = client.call("POST", base + "/api/resume/respond", token, {
                "session_id": session["session_id"], "gate": data["gate_id"],
                "answer": client.answer_for(data["name"], data["payload"])})
            assert code == 200 or body["error"]["code"] == "already_answered", (code, body)
        if kind in ("session_complete", "session_failed", "session_cancelled", "session_expired"):
            return last_id, kind
        if until and until(data):
            return last_id, "until"
    return last_id, "ended"


def model_calls(log):
    with open(log) as lines:
        return sum("recorded model answer" in line for line in lines)


def main():
    binary, work = sys.argv[1], sys.argv[2]
    latency = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    kill_after = float(sys.argv[4]) if len(sys.argv) > 4 else 1.5
    os.makedirs(work, exist_ok=True)

    # An uninterrupted session, for the figures to compare with.
    plain_log = os.path.join(work, "plain.log")
    server, base = serve(binary, plain_log, latency, ["--db", os.path.join(work, "plain.db")])
    plain = start(base)
    _, outcome = follow(base, plain)
    plain_kinds = [e.get("type") for _, e in client.events(base, plain["stream_url"], plain["token"], 0)]
    server.terminate()
    server.wait()
    plain_calls = model_calls(plain_log)
    print("uninterrupted:", outcome, plain_calls, "model calls")

    # The same session, killed in the middle of the writing stage.
    db = os.path.join(work, "killed.db")
    first_log, second_log = os.path.join(work, "first.log"), os.path.join(work, "second.log")
    server, base = serve(binary, first_log, latency, ["--db", db])
    session = start(base)
    last_id, _ = follow(base, session, 0, lambda e: e.get("type") == "stage_start" and e.get("stage") == "writing")
    threading.Thread(target=follow, args=(base, session, last_id), daemon=True).start()
    time.sleep(kill_after)
    os.kill(server.pid, signal.SIGKILL)
    server.wait()

    server, base = serve(binary, second_log, latency, ["--db", db])
    code, status = client.call("GET", base + session["status_url"], session["token"])
    print("after the restart:", status["status"], status["stage"])
    _, outcome = follow(base, session)
    events = list(client.events(base, session["stream_url"], session["token"], 0))
    server.terminate()
    server.wait()

    ids = [event_id for event_id, _ in events]
    stages = [e["stage"] for _, e in events if e.get("type") == "stage_start"]
    before, after = model_calls(first_log), model_calls(second_log)
    print("outcome:", outcome, "| events:", len(ids), "| stages started:", " ".join(stages))
    print("model calls: %d before the kill + %d after = %d (uninterrupted: %d)"
          % (before, after, before + after, plain_calls))
    checks = {
        "the session completes": outcome == "session_complete",
        "ids are 1, 2, 3, ...": ids == list(range(1, len(ids) + 1)),
        "the events of an uninterrupted session, each once":
            [e.get("type") for _, e in events] == plain_kinds,
        "no stage started twice": len(stages) == len(set(stages)) == 8,
        "the restart came inside the run": before > 0 and after > 0,
        "at most one model call repeated": plain_calls <= before + after <= plain_calls + 1,
    }
    for name, ok in checks.items():
        print("ok  " if ok else "FAIL", name)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
